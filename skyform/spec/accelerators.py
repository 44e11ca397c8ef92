"""`accelerators:` (alias `gpus:`) in its three YAML forms.

- a string: `V100`, `V100:8`, `A10:0.5`, `tpu-v2-8`;
- a mapping (a set; the planner picks the cheapest): `{A100: 1, V100: 1}`, also the flow
  set `{'A100:1', 'V100:1'}` which YAML reads as keys with null values;
- a list (an order of preference): `[L4:1, H100:1]`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from skyform.spec.errors import BadValue, describe
from skyform.spec.yamlpos import Path

MAX_ACCELERATOR_COUNT = 512
NOT_GPUS = ("tpu-", "inferentia", "trainium", "gaudi", "radeon")  # accelerators, not NVIDIA's
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_BY_MEMORY = re.compile(r"^[0-9]+[GgMmTt][Bb]\+?$")


def has_nvidia_gpu(accelerator: str | None) -> bool:
    return bool(accelerator) and not str(accelerator).lower().startswith(NOT_GPUS)


FORMS_HINT = (
    "Write e.g. 'V100', 'V100:8', '{A100: 1, V100: 1}' (any) or '[L4:1, H100:1]' (ordered)."
)


@dataclass(frozen=True)
class Accel:
    name: str
    count: float
    path: Path


@dataclass(frozen=True)
class AccelChoice:
    """`single` (one item), `set` (pick the best) or `ordered` (try in order)."""

    kind: Literal["single", "set", "ordered"]
    items: tuple[Accel, ...]


class AccelProblem(BadValue):
    def __init__(self, message: str, path: Path, hint: str | None = FORMS_HINT, **kw: Any):
        super().__init__(message, hint, **kw)
        self.path = path


def canonical_name(name: str) -> str:
    """Upper-case as users usually write GPU names; TPU names are lower-case in catalogs."""
    return name.lower() if name.lower().startswith("tpu") else name.upper()


def _count(raw: Any, text: str, path: Path) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise AccelProblem(f"accelerator count must be a number, got {describe(raw)}", path)
    try:
        count = float(raw)
    except ValueError:
        raise AccelProblem(f"bad accelerator count in '{text}'", path) from None
    if not count > 0:
        raise AccelProblem(f"accelerator count must be greater than 0 in '{text}'", path)
    if count > MAX_ACCELERATOR_COUNT:
        raise AccelProblem(
            f"accelerator count {count:.12g} in '{text}' is more than {MAX_ACCELERATOR_COUNT}",
            path,
            "Counts are per node; use num_nodes for more machines.",
        )
    return count


def parse_one(text: Any, path: Path, count: Any = None) -> Accel:
    """`NAME` or `NAME:COUNT` (a mapping's value may carry the count instead)."""
    if not isinstance(text, str):
        raise AccelProblem(f"expected an accelerator name, got {describe(text)}", path)
    parts = [p.strip() for p in text.split(":")]
    if len(parts) > 3 or any(_BY_MEMORY.match(p) for p in parts):
        raise AccelProblem(
            f"accelerator '{text}': choosing accelerators by memory size is not supported",
            path,
            "Name the accelerator, e.g. 'A100-80GB:1'.",
            unsupported=True,
        )
    if len(parts) != 2 and len(parts) != 1:
        raise AccelProblem(f"accelerator '{text}' should be NAME or NAME:COUNT", path)
    name = parts[0]
    if not _NAME.fullmatch(name):
        raise AccelProblem(f"'{text}' is not an accelerator name", path)
    if len(parts) == 2:
        if count is not None:
            raise AccelProblem(
                f"accelerator '{text}' has a count in its name and a value ({describe(count)})",
                path,
                f"Write either '{name}: {count}' or '{text}: null'.",
            )
        count = parts[1]
    amount = 1.0 if count is None else _count(count, text, path)
    return Accel(canonical_name(name), amount, path)


def parse_accelerators(value: Any, path: Path) -> AccelChoice:
    if isinstance(value, str):
        return AccelChoice("single", (parse_one(value, path),))
    if isinstance(value, dict):
        items = [parse_one(k, (*path, k), v) for k, v in value.items()]
        kind: Literal["single", "set", "ordered"] = "set"
    elif isinstance(value, list):
        items = [parse_one(v, (*path, i)) for i, v in enumerate(value)]
        kind = "ordered"
    else:
        raise AccelProblem(f"expected an accelerator spec, got {describe(value)}", path)
    if not items:
        raise AccelProblem("accelerators is empty", path, "Remove the key or name one.")
    unique: dict[tuple[str, float], Accel] = {}
    for item in items:
        unique.setdefault((item.name, item.count), item)
    deduped = tuple(unique.values())
    return AccelChoice("single" if len(deduped) == 1 else kind, deduped)
