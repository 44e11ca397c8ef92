"""Cluster names: what a task's name (or `-c NAME`) becomes, and when that is refused.

A cluster name is what every engine accepts (a Pulumi stack, an AWS tag, a GCP resource, a
Kubernetes object, a directory or lock file under SKYFORM_HOME): lower-case letters, digits
and dashes, starting with a letter, at most 40 characters. A name given with `-c` may be any
name SkyPilot accepts (SKYPILOT_NAME: `my_cluster`, `Cuda_11.8`): the cluster is then named
`my-cluster` for the engines and everywhere inside skyform, and *shown* as typed (the plan
records both: ClusterSpec.shown_as); `-c` of a name SkyPilot refuses is refused. A name
taken from the task (`name:`, or the file name) is made into one, and the plan says so.
Names that differ only by case or by `_`/`.` against `-` are one cluster here
(`engine_name`), where SkyPilot has two.

Making a name never throws information away silently: when nothing of the text survives
(`名前`, `..`) or the name is cut at 40 characters, a short digest of the full text is
appended, so two different names cannot end up as one cluster that way. Case and
punctuation folding (`Train_V2` → `train-v2`) is kept readable; two task files whose names
fold to the same cluster are told apart by ownership (see diff.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skyform.digests import sha256_hex
from skyform.errors import PlanError

MAX_CLUSTER_NAME = 40
# SkyPilot's CLUSTER_NAME_VALID_REGEX (sky/skylet/constants.py): what `sky launch -c` takes
SKYPILOT_NAME = re.compile(r"[a-zA-Z]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?")
FALLBACK = "sky"
_TAG = 6  # hex digits of the full text's digest when a name had to be cut or replaced


def _tag(text: str) -> str:
    return sha256_hex(text)[:_TAG]


def sanitize_name(text: str) -> str:
    """The cluster name for `text`; a valid cluster name is returned unchanged."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    name = re.sub(r"-{2,}", "-", name)
    if not name:
        return FALLBACK if text == FALLBACK else f"{FALLBACK}-{_tag(text)}"
    if not name[0].isalpha():
        name = f"{FALLBACK}-{name}"
    if len(name) > MAX_CLUSTER_NAME:
        name = f"{name[: MAX_CLUSTER_NAME - _TAG - 1].rstrip('-')}-{_tag(text)}"
    return name


def is_cluster_name(text: str) -> bool:
    return sanitize_name(text) == text


def is_skypilot_name(text: str) -> bool:
    """A cluster name `sky launch -c` accepts (it may not be an engine-safe one)."""
    return SKYPILOT_NAME.fullmatch(text) is not None and len(text) <= MAX_CLUSTER_NAME


def engine_name(text: str) -> str:
    """The cluster a name the user typed means: a SkyPilot name as skyform names it for
    the engines (`my_cluster` → `my-cluster`); any other text is left as it is (a lookup
    of it finds nothing and says so)."""
    return sanitize_name(text) if is_skypilot_name(text) else text


@dataclass(frozen=True)
class ClusterName:
    """A task's cluster name and, when it was made from other text, what that text was."""

    name: str
    made_from: str | None = None  # e.g. 'the task name "train_v2"'
    shown: str | None = None  # the name as typed with -c, when the engines get another


def require_cluster_name(text: str, flag: str = "--cluster/-c") -> str:
    """A name the user typed as a cluster name: its engine name; refused unless SkyPilot
    accepts it too (letters, digits, `-`, `_`, `.`, starting with a letter, not ending with
    punctuation) or it is one already."""
    if is_cluster_name(text) or is_skypilot_name(text):
        return sanitize_name(text)
    suggestion = sanitize_name(text)
    raise PlanError(
        f"{text!r} is not a valid cluster name: cluster names are letters, digits and "
        "`-`, `_` or `.` between them (as SkyPilot's), start with a letter and have at most "
        f"{MAX_CLUSTER_NAME} characters",
        f"Pass {flag} {suggestion}",
    )


def _typed(text: str, what: str) -> ClusterName:
    """A name typed with -c (or a pipeline's `-c` prefix): shown as typed when SkyPilot
    takes it and the engines need another."""
    made = _named(text, what)
    shown = text if made.made_from is not None and is_skypilot_name(text) else None
    return ClusterName(made.name, made.made_from, shown)


def _named(text: str, what: str) -> ClusterName:
    name = sanitize_name(text)
    return ClusterName(name, None if name == text else f'{what} "{text}"')


def cluster_names(
    task_names: list[str | None], dag_name: str | None, task_path: str, override: str | None
) -> list[ClusterName]:
    """One name per task. Single task: `-c`, else its name, else the pipeline's, else the file
    stem. Pipelines: `<prefix>-<task name or number>`, made unique with `-2`, `-3`..."""
    stem = re.sub(r"\.ya?ml$", "", task_path.rsplit("/", 1)[-1])
    if override is not None:
        require_cluster_name(override)
    if len(task_names) == 1:
        if override is not None:
            return [_typed(override, "--cluster")]
        for text, what in ((task_names[0], "the task name"), (dag_name, "the pipeline name")):
            if text:
                return [_named(text, what)]
        return [_named(stem, "the task file name")]
    prefix, what = (
        (override, "--cluster")
        if override is not None
        else (dag_name, "the pipeline name")
        if dag_name
        else (stem, "the task file name")
    )
    names: list[ClusterName] = []
    seen: dict[str, int] = {}
    for i, task_name in enumerate(task_names):
        text = f"{prefix}-{task_name or i + 1}"
        what_named = f"{what} and the task name" if task_name else what
        made = _typed(text, what_named) if override is not None else _named(text, what_named)
        seen[made.name] = seen.get(made.name, 0) + 1
        if seen[made.name] > 1:
            unique = sanitize_name(f"{made.name}-{seen[made.name]}")
            made = ClusterName(unique, made.made_from or f'"{text}" (another task has that name)')
            # (a renamed duplicate is shown by its engine name: the typed one is the other's)
        names.append(made)
    return names
