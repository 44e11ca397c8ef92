"""Cluster names: what a task's name (or `-c NAME`) becomes, and when that is refused.

A cluster name is what every engine accepts (a Pulumi stack, an AWS tag, a GCP resource, a
directory under SKYFORM_HOME): lower-case letters, digits and dashes, starting with a letter,
at most 40 characters. A name given with `-c` must already be one: `-c train_v2` is refused
with the name to use instead (`train-v2`), as SkyPilot refuses an invalid `-c`. A name taken
from the task (`name:`, or the file name) is made into one, and the plan says so.

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


@dataclass(frozen=True)
class ClusterName:
    """A task's cluster name and, when it was made from other text, what that text was."""

    name: str
    made_from: str | None = None  # e.g. 'the task name "train_v2"'


def require_cluster_name(text: str, flag: str = "--cluster/-c") -> str:
    """A name the user typed as a cluster name: refused unless it is one already."""
    if is_cluster_name(text):
        return text
    suggestion = sanitize_name(text)
    raise PlanError(
        f"{text!r} is not a valid cluster name: cluster names are lower-case letters, digits "
        f"and dashes, start with a letter and have at most {MAX_CLUSTER_NAME} characters; "
        f"it would become {suggestion!r}",
        f"Pass {flag} {suggestion}",
    )


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
            return [ClusterName(override)]
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
        made = _named(text, f"{what} and the task name" if task_name else what)
        seen[made.name] = seen.get(made.name, 0) + 1
        if seen[made.name] > 1:
            unique = sanitize_name(f"{made.name}-{seen[made.name]}")
            made = ClusterName(unique, made.made_from or f'"{text}" (another task has that name)')
        names.append(made)
    return names
