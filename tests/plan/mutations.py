"""Edited plans, generated from a real one: every field changed, removed, duplicated, set to
NaN/Infinity/negative/huge/the wrong type, names with `..`, `/`, NUL and unicode.

A mutation is (label, text): the JSON text of the edited plan. Special values JSON cannot
say (NaN, 1e400) and duplicate keys are written by `emit`, a tiny serializer of its own.
Lists are mutated as a whole and through their first item only, so a plan with fifty
alternatives does not give fifty copies of the same edits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Raw:
    """A JSON token written as is (NaN, Infinity, 1e400)."""

    text: str


@dataclass(frozen=True)
class Dup:
    """An object whose `key` appears twice: first with its value, then with `second`."""

    members: dict
    key: str
    second: Any


REMOVED = object()
NAMES = ["..", "../../../escaped", "a/b", "x\u0000y", "名前", "", "Train_V2", "x" * 300]
NUMBERS = [Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), -1, Raw("1e400"), 10**30, True, "1"]


def emit(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Dup):
        body = [f"{json.dumps(k)}: {emit(v)}" for k, v in value.members.items()]
        body.append(f"{json.dumps(value.key)}: {emit(value.second)}")
        return "{" + ", ".join(body) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {emit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(emit(v) for v in value) + "]"
    return json.dumps(value)


def _replace(raw: Any, path: tuple, new: Any) -> Any:
    """A copy of `raw` with the value at `path` replaced (REMOVED: taken out)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(raw, dict):
        out = dict(raw)
        if rest or new is not REMOVED:
            out[head] = _replace(raw[head], rest, new)
        else:
            del out[head]
        return out
    out_list = list(raw)
    if rest or new is not REMOVED:
        out_list[head] = _replace(raw[head], rest, new)
    else:
        del out_list[head]
    return out_list


def _paths(raw: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, raw
    if isinstance(raw, dict):
        for key, value in raw.items():
            yield from _paths(value, (*path, key))
    elif isinstance(raw, list) and raw:
        yield from _paths(raw[0], (*path, 0))


def _edits(value: Any, in_object: bool) -> Iterator[tuple[str, Any]]:
    if in_object:
        yield "removed", REMOVED
    if isinstance(value, bool):
        yield "flipped", not value
        yield "as a number", int(value)
        yield "as text", str(value).lower()
    elif isinstance(value, (int, float)):
        for number in NUMBERS:
            yield f"= {emit(number)}", number
        yield "+1", value + 1
    elif isinstance(value, str):
        for name in NAMES:
            yield f"= {name[:12]!r}", name
        yield "as a number", 7
        yield "changed", value + "x"
    elif value is None:
        yield "as an object", {}
        yield "as text", "x"
        yield "as a number", -3
    elif isinstance(value, list):
        yield "emptied", []
        yield "as an object", {}
        if value:
            yield "first item twice", [value[0], *value]
            yield "first item dropped", value[1:]
    elif isinstance(value, dict):
        yield "as a list", []
        yield "emptied", {}


def mutations(raw: dict) -> Iterator[tuple[str, str]]:
    for path, value in _paths(raw):
        where = ".".join(str(p) for p in path) or "(plan)"
        for what, new in _edits(value, bool(path) and isinstance(path[-1], str)):
            yield f"{where} {what}", emit(_replace(raw, path, new))
        if isinstance(value, dict) and value:
            key = sorted(value)[0]
            other = not value[key] if isinstance(value[key], bool) else None
            yield f"{where}.{key} twice", emit(_replace(raw, path, Dup(value, key, other)))
