"""Scalar resource values: cpus, memory, disk size, tiers, ports, autostop, job recovery.

Each parser takes the raw YAML value and returns the normalized one or raises `BadValue`
(the caller knows the position). Accepted forms follow SkyPilot; sanity bounds reject
values no real machine has, which are almost always typos (`disk_size: 2560000`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from skyform.spec.errors import BadValue, describe, did_you_mean
from skyform.spec.models import Autostop, Range
from skyform.spec.recovery import NAMES

MAX_CPUS = 4096
MAX_MEMORY_GIB = 65536
MAX_DISK_GB = 65536
MAX_HOURLY_COST = 1_000_000
MAX_IDLE_MINUTES = 10 * 365 * 24 * 60
MAX_PORT_ENTRIES = 1000

DISK_TIERS = ("low", "medium", "high", "ultra", "best")
NETWORK_TIERS = ("standard", "best")
RECOVERY_STRATEGIES = NAMES
AUTOSTOP_WAIT_FOR = ("jobs_and_ssh", "jobs", "none")

# SkyPilot's memory units; a bare number is GB, and its GB is 2**30 bytes (GiB).
_UNITS_GIB = {
    "kb": 1 / 1024**2,
    "ki": 1 / 1024**2,
    "mb": 1 / 1024,
    "mi": 1 / 1024,
    "gb": 1.0,
    "gi": 1.0,
    "tb": 1024.0,
    "ti": 1024.0,
    "pb": 1024.0**2,
    "pi": 1024.0**2,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]{2})?\s*$")
_TIME = re.compile(r"^([0-9]+)([mhdwMHDW])?$")
_TIME_MINUTES = {"m": 1, "h": 60, "d": 24 * 60, "w": 7 * 24 * 60}


def _number(value: Any, what: str, hint: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadValue(f"{what} must be a number, got {describe(value)}", hint)
    if not math.isfinite(value):
        raise BadValue(f"{what} must be a finite number", hint)
    return float(value)


def _split_plus(value: Any, what: str, hint: str) -> tuple[str, bool]:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise BadValue(
            f"{what} must be a number or a string like '4+', got {describe(value)}", hint
        )
    text = str(value).strip()
    if text.endswith("+"):
        return text[:-1].strip(), True
    return text, False


def parse_cpus(value: Any) -> Range:
    hint = "Write e.g. 'cpus: 8' (exactly 8) or 'cpus: 4+' (at least 4)."
    text, plus = _split_plus(value, "cpus", hint)
    try:
        amount = float(text)
    except ValueError:
        raise BadValue(f"cpus '{value}' is not a number", hint) from None
    if not (math.isfinite(amount) and amount > 0):
        raise BadValue(f"cpus must be greater than 0, got '{value}'", hint)
    if amount > MAX_CPUS:
        raise BadValue(f"cpus {amount:.12g} is more than any machine has (max {MAX_CPUS})", hint)
    return Range(value=amount, at_least=plus)


def parse_size_gib(text: str, what: str, hint: str) -> float:
    """`32`, `32GB`, `512MB`, `1TB` ... -> GiB (SkyPilot's GB is GiB)."""
    match = _SIZE.match(text)
    if not match:
        raise BadValue(f"{what} '{text}' is not a size", hint)
    number, unit = match.groups()
    if unit is None:
        return float(number)
    factor = _UNITS_GIB.get(unit.lower())
    if factor is None:
        raise BadValue(f"{what} '{text}' has an unknown unit '{unit}'", hint)
    return float(number) * factor


def parse_memory(value: Any) -> Range:
    hint = "Write e.g. 'memory: 32' (GB), 'memory: 32+' or 'memory: 64GB+'."
    text, plus = _split_plus(value, "memory", hint)
    amount = parse_size_gib(text, "memory", hint)
    if not amount > 0:
        raise BadValue(f"memory must be greater than 0, got '{value}'", hint)
    if amount > MAX_MEMORY_GIB:
        raise BadValue(f"memory {amount:.12g} GB is more than any machine has", hint)
    return Range(value=amount, at_least=plus)


def parse_disk_size(value: Any) -> int:
    hint = "Write the size in GB, e.g. 'disk_size: 512' or 'disk_size: 1TB'."
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BadValue(
            f"disk_size must be an integer or a size string, got {describe(value)}", hint
        )
    gib = float(value) if isinstance(value, int) else parse_size_gib(value, "disk_size", hint)
    if gib != int(gib):
        raise BadValue(f"disk_size '{value}' is not a whole number of GB", hint)
    if gib < 1:
        raise BadValue(f"disk_size must be at least 1 GB, got '{value}'", hint)
    if gib > MAX_DISK_GB:
        raise BadValue(f"disk_size {gib:.12g} GB is larger than the {MAX_DISK_GB} GB limit", hint)
    return int(gib)


def parse_tier(value: str, what: str, allowed: tuple[str, ...]) -> str:
    lowered = value.strip().lower()
    if lowered not in allowed:
        guess = did_you_mean(lowered, allowed)
        hint = f"Did you mean '{guess}'? " if guess else ""
        raise BadValue(f"unknown {what} '{value}'", f"{hint}Choose one of: {', '.join(allowed)}.")
    return lowered


def _port_range(item: Any) -> tuple[int, int]:
    hint = "Ports are numbers 1-65535 or ranges like '8000-8010'."
    if isinstance(item, bool) or not isinstance(item, int | str):
        raise BadValue(f"a port must be a number or 'a-b', got {describe(item)}", hint)
    text = str(item).strip()
    parts = text.split("-")
    if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
        raise BadValue(f"port '{text}' is not a number or a range 'a-b'", hint)
    low, high = int(parts[0]), int(parts[-1])
    if not (1 <= low <= 65535 and 1 <= high <= 65535):
        raise BadValue(f"port '{text}' is outside 1-65535", hint)
    if low > high:
        raise BadValue(f"port range '{text}' is backwards", f"Write '{high}-{low}'.")
    return low, high


def parse_ports(value: Any) -> tuple[str, ...]:
    """Sorted, merged ranges as strings: ('22', '8000-8010')."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_PORT_ENTRIES:
        raise BadValue(f"more than {MAX_PORT_ENTRIES} port entries", "Use ranges like '8000-8999'.")
    ranges = sorted(_port_range(item) for item in items)
    merged: list[list[int]] = []
    for low, high in ranges:
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return tuple(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in merged)


def parse_image_id(value: Any) -> str | dict[str, str] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        for region, image in value.items():
            if not isinstance(image, str):
                raise BadValue(
                    f"image_id for region '{region}' must be a string, got {describe(image)}"
                )
        return dict(value)
    raise BadValue(
        f"image_id must be a string or a mapping region -> image, got {describe(value)}",
        "Write e.g. 'image_id: docker:ubuntu:22.04' or 'image_id: {us-east-1: ami-123}'.",
    )


def parse_max_hourly_cost(value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise BadValue(f"max_hourly_cost must be greater than 0, got {value:.12g}")
    if value > MAX_HOURLY_COST:
        raise BadValue(
            f"max_hourly_cost {value:.12g} is beyond any real price (max {MAX_HOURLY_COST})"
        )
    return float(value)


def parse_minutes(value: Any) -> int:
    hint = "Write minutes, or a duration like '30m', '2h', '1d'."
    if isinstance(value, int) and not isinstance(value, bool):
        minutes = value
    elif isinstance(value, str) and _TIME.match(value.strip()):
        number, unit = _TIME.match(value.strip()).groups()  # type: ignore[union-attr]
        minutes = int(number) * _TIME_MINUTES[(unit or "m").lower()]
    else:
        raise BadValue(f"autostop '{value}' is not a duration", hint)
    if minutes < 0:
        raise BadValue(f"autostop must not be negative, got {minutes}", hint)
    if minutes > MAX_IDLE_MINUTES:
        raise BadValue(f"autostop of {minutes} minutes is more than ten years", hint)
    return minutes


def recovery_strategy(value: str) -> str:
    upper = value.strip().upper()
    if upper not in RECOVERY_STRATEGIES:
        guess = did_you_mean(upper, RECOVERY_STRATEGIES)
        hint = f"Did you mean '{guess}'? " if guess else ""
        raise BadValue(
            f"unknown job recovery strategy '{value}'",
            f"{hint}Choose one of: {', '.join(RECOVERY_STRATEGIES)}.",
        )
    return upper


def exit_codes(value: Any) -> tuple[int, ...]:
    items = value if isinstance(value, list) else [value]
    hint = "Exit codes are integers 0-255, one or a list."
    for code in items:
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 255:
            raise BadValue(f"recover_on_exit_codes: {describe(code)} is not an exit code", hint)
    if len(set(items)) != len(items):
        raise BadValue("recover_on_exit_codes lists a code twice", hint)
    return tuple(sorted(items))


def autostop_from(value: Any) -> Autostop:
    """bool, minutes, or a duration string; the mapping form is handled by the caller."""
    if isinstance(value, bool):
        return Autostop(enabled=value)
    return Autostop(enabled=True, idle_minutes=parse_minutes(value))


def wait_for(value: str) -> str:
    lowered = value.strip().lower()
    if lowered not in AUTOSTOP_WAIT_FOR:
        raise BadValue(
            f"unknown autostop wait_for '{value}'",
            f"Choose one of: {', '.join(AUTOSTOP_WAIT_FOR)}.",
        )
    return lowered
