"""Writing and reading plan files: deterministic bytes, atomic writes, an untrusted reader.

Same plan ⇒ same bytes: keys sorted, two-space indent, floats already rounded by the model,
no timestamps. The file carries its own content digest (`digest`: sha256 over the same
bytes without that key), which `show --markdown` prints and `apply --expect-digest` checks.

A plan is committed, posted and applied by CI, so reading one trusts nothing: bounded size
and depth, no duplicate keys, no NaN/Infinity, a strict schema (no bool for an int), then
the cross-checks of plancheck.py and the digests recomputed. Any failure is PlanCorruptError
("plan is corrupt or was edited: <JSON path>: <what>"), before anything is written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from skyform.errors import PlanFileError
from skyform.inputfile import read_input_file
from skyform.paths import write_output
from skyform.plan.model import FORMAT_VERSION, Plan
from skyform.plan.planjson import (
    DIGEST_KEY,
    MAX_DEPTH,
    MAX_PLAN_BYTES,
    REPLAN_HINT,
    content_digest,
    corrupt,
    decode,
    dumps,
    plan_digest,
)


def plan_bytes(plan: Plan) -> bytes:
    data = plan.model_dump(mode="json")
    data[DIGEST_KEY] = plan_digest(dumps(data))
    return dumps(data)


def write_plan(plan: Plan, path: Path) -> bytes:
    """Save the plan at `path`: a regular file (or a link to one) or nothing yet; a device,
    a FIFO or a directory is refused before anything is written (paths.output_file)."""
    data = plan_bytes(plan)
    write_output(path, data, "the plan")
    return data


def parse_plan(data: bytes, label: str) -> Plan:
    from skyform.plan.plancheck import check_plan, check_values

    hint = REPLAN_HINT.format(path=label)
    raw = decode(data, label)
    if not isinstance(raw, dict) or "format_version" not in raw:
        raise PlanFileError(f"{label} is not a skyform plan (no format_version)", hint)
    version = raw["format_version"]
    if type(version) is not int:
        raise corrupt(label, f"format_version is {version!r}, not a whole number", "format_version")
    if version != FORMAT_VERSION:
        writer = raw.get("skyform_version", "an unknown version")
        newer = version > FORMAT_VERSION
        raise PlanFileError(
            f"{label} has plan format version {version!r} (written by skyform {writer!s:.40}); "
            f"this skyform reads format version {FORMAT_VERSION}",
            "Use the skyform version that wrote it."
            if newer
            else f"Re-run skyform plan with this skyform: skyform plan TASK.yaml -o {label}",
        )
    problem = check_values(raw, max_depth=MAX_DEPTH)
    if problem is not None:
        raise corrupt(label, *problem)
    recorded = raw.pop(DIGEST_KEY, None)
    try:
        # strict: `true` is not a number and "3" is not an int (pydantic's lax mode takes both)
        plan = Plan.model_validate_json(json.dumps(raw), strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        raise corrupt(label, f"{first['msg']}{more}", where) from None
    problem = check_plan(plan)
    if problem is not None:
        raise corrupt(label, *problem)
    if recorded != content_digest(plan):
        what = "no content digest" if recorded is None else "its content digest does not match"
        raise corrupt(label, what, DIGEST_KEY)
    return _with_workdir_flags(plan)


def _with_workdir_flags(plan: Plan) -> Plan:
    """A plan written before changes carried `workdir_changed` (format 2 still) said so only
    in its `workdir_files` attribute line: read that once, here, so apply never reads
    attribute lines (their digest was checked above, against the bytes as written)."""
    older = [
        c
        for c in plan.changes
        if not c.workdir_changed and any(a.path == "workdir_files" for a in c.attributes)
    ]
    if not older:
        return plan
    changes = [
        c.model_copy(update={"workdir_changed": True}) if c in older else c for c in plan.changes
    ]
    return plan.model_copy(update={"changes": changes})


def read_plan(path: Path) -> tuple[Plan, bytes]:
    """The plan and the exact bytes it was read from (apply records their digest)."""
    path = Path(path)
    if not os.path.lexists(path):
        raise PlanFileError(
            f"no plan file at {path}", "Make one first: skyform plan TASK.yaml -o PLAN.json"
        )
    # read once and bounded: a device, a FIFO or a symlink loop is an error, never a hang
    data = read_input_file(
        path,
        MAX_PLAN_BYTES,
        what="a plan file",
        error=lambda message, hint: PlanFileError(f"{path}: {message}", hint),
    )
    # the plan file's folder is where its recorded base (task.relative_to) starts
    return parse_plan(data, str(path)).at(path.resolve().parent), data
