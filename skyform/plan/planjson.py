"""A plan file's JSON, without the models (pydantic-free: the fast path of `show` reads
plans through it, plan/planview.py): the canonical bytes, the content digest, and the
bounded, strict decoder every plan file goes through first. planfile.py says the rules.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from skyform.digests import sha256
from skyform.errors import PlanCorruptError, PlanFileError

REPLAN_HINT = "Make a new one: skyform plan TASK.yaml -o {path}"
DIGEST_KEY = "digest"
MAX_PLAN_BYTES = 64 * 1024 * 1024  # a 500-task pipeline with long scripts is a few MB
MAX_DEPTH = 16  # the deepest real plan nests 7 levels (tasks.0.alternatives.0.offer.x)


def dumps(data: dict) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def content_digest(plan: Any) -> str:
    """`sha256:…` over the plan's canonical bytes without the digest key (a Plan, or the
    strict reader's PlanView: anything with the models' `model_dump(mode="json")`)."""
    return plan_digest(dumps(plan.model_dump(mode="json")))


def plan_digest(data: bytes) -> str:
    return sha256(data)


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


# a top-level key only a SkyPilot task file has (a plan is JSON: `{` first)
TASK_KEY = re.compile(
    r"^(run|setup|resources|workdir|file_mounts|num_nodes|envs|service)\s*:", re.MULTILINE
)


def decode(data: bytes, label: str) -> Any:
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
        if TASK_KEY.search(text):
            raise PlanFileError(
                f"{label} is a task file, not a saved plan",
                f"Plan it into a file first: skyform plan {label} -o plan.json (then pass "
                f"plan.json); `skyform plan {label}` shows its cost too.",
            ) from None
        raise PlanFileError(
            f"{label} is not a skyform plan: invalid JSON at line {exc.lineno} "
            f"column {exc.colno} ({exc.msg}); the file is truncated or was edited",
            hint,
        ) from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise corrupt(label, str(exc)) from None
