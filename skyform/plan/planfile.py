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
import math
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skyform.digests import sha256
from skyform.errors import PlanCorruptError, PlanFileError
from skyform.inputfile import read_input_file
from skyform.paths import write_atomic
from skyform.plan.model import FORMAT_VERSION, Plan

REPLAN_HINT = "Make a new one: skyform plan TASK.yaml -o {path}"
DIGEST_KEY = "digest"
MAX_PLAN_BYTES = 64 * 1024 * 1024  # a 500-task pipeline with long scripts is a few MB
MAX_DEPTH = 16  # the deepest real plan nests 7 levels (tasks.0.alternatives.0.offer.x)


def _dumps(data: dict) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def content_digest(plan: Plan) -> str:
    """`sha256:…` over the plan's canonical bytes without the digest key."""
    return plan_digest(_dumps(plan.model_dump(mode="json")))


def plan_bytes(plan: Plan) -> bytes:
    data = plan.model_dump(mode="json")
    data[DIGEST_KEY] = plan_digest(_dumps(data))
    return _dumps(data)


def plan_digest(data: bytes) -> str:
    return sha256(data)


def write_plan(plan: Plan, path: Path) -> bytes:
    if not Path(path).parent.exists():
        raise PlanFileError(
            f"cannot write the plan to {path}: directory {Path(path).parent} does not exist"
        )
    data = plan_bytes(plan)
    write_atomic(Path(path), data)
    return data


class _Refused(ValueError):
    """Raised inside the JSON decoder's hooks; becomes a PlanCorruptError."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Refused(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text} is out of range")
    return value


def _no_constant(text: str) -> float:
    raise _Refused(f"{text} is not a number a plan can hold")


def corrupt(label: str, what: str, where: str = "") -> PlanCorruptError:
    at = f"{where}: " if where else ""
    return PlanCorruptError(
        f"{label}: plan is corrupt or was edited: {at}{what}", REPLAN_HINT.format(path=label)
    )


def _decode(data: bytes, label: str) -> Any:
    hint = REPLAN_HINT.format(path=label)
    if len(data) > MAX_PLAN_BYTES:
        raise corrupt(label, f"{len(data)} bytes, more than a plan can be ({MAX_PLAN_BYTES})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanFileError(f"{label} is not a skyform plan: not UTF-8 text", hint) from None
    try:
        return json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_float=_finite,
            parse_constant=_no_constant,
        )
    except _Refused as exc:
        raise corrupt(label, str(exc)) from None
    except RecursionError:
        raise corrupt(label, f"nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise PlanFileError(
            f"{label} is not a skyform plan: invalid JSON at line {exc.lineno} "
            f"column {exc.colno} ({exc.msg}); the file is truncated or was edited",
            hint,
        ) from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise corrupt(label, str(exc)) from None


def parse_plan(data: bytes, label: str) -> Plan:
    from skyform.plan.plancheck import check_plan, check_values

    hint = REPLAN_HINT.format(path=label)
    raw = _decode(data, label)
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
    return parse_plan(data, str(path)), data
