"""Writing and reading plan files: deterministic bytes, atomic writes, clear refusals.

Same plan ⇒ same bytes: keys sorted, two-space indent, floats already rounded by the model,
no timestamps. A file that is not JSON, not a plan, of another format version, or fails
validation is refused with a message that says which and what to do.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
from pathlib import Path

from pydantic import ValidationError

from skyform.errors import PlanFileError
from skyform.plan.model import FORMAT_VERSION, Plan

REPLAN_HINT = "Make a new one: skyform plan TASK.yaml -o {path}"


def plan_bytes(plan: Plan) -> bytes:
    data = plan.model_dump(mode="json")
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def plan_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write via a temp file in the same directory, fsync, then rename over `path`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_plan(plan: Plan, path: Path) -> bytes:
    if not Path(path).parent.exists():
        raise PlanFileError(
            f"cannot write the plan to {path}: directory {Path(path).parent} does not exist"
        )
    data = plan_bytes(plan)
    write_atomic(Path(path), data)
    return data


def parse_plan(data: bytes, label: str) -> Plan:
    hint = REPLAN_HINT.format(path=shlex.quote(label))
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise PlanFileError(f"{label} is not a skyform plan: not UTF-8 text", hint) from None
    except json.JSONDecodeError as exc:
        raise PlanFileError(
            f"{label} is not a skyform plan: invalid JSON at line {exc.lineno} "
            f"column {exc.colno} ({exc.msg}); the file is truncated or was edited",
            hint,
        ) from None
    if not isinstance(raw, dict) or "format_version" not in raw:
        raise PlanFileError(f"{label} is not a skyform plan (no format_version)", hint)
    version = raw["format_version"]
    if version != FORMAT_VERSION:
        writer = raw.get("skyform_version", "an unknown version")
        raise PlanFileError(
            f"{label} has plan format version {version!r} (written by skyform {writer}); "
            f"this skyform reads format version {FORMAT_VERSION}",
            "Plan again with this skyform, or use the skyform version that wrote it.",
        )
    try:
        return Plan.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PlanFileError(
            f"{label} is corrupt: {where}: {first['msg']}"
            + (f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""),
            hint,
        ) from None


def read_plan(path: Path) -> tuple[Plan, bytes]:
    """The plan and the exact bytes it was read from (apply records their digest)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise PlanFileError(
            f"no plan file at {path}", "Make one first: skyform plan TASK.yaml -o PLAN.json"
        ) from None
    except IsADirectoryError:
        raise PlanFileError(f"{path} is a directory, not a plan file") from None
    return parse_plan(data, str(path)), data
