"""Plan files whose bytes differ and whose canonical content is the same: what JSON lets one
write several ways (key order, whitespace, `\\u0068` for `h`, `1` for `1.0`, `1e0`, `-0`),
money with float noise the model rounds away, and fields at their default written out or
left out. The loader must read each as the very plan the canonical bytes say, and apply
must act on that alone (issue 26).

The field kinds come from skyform/plan/planschema.py (generated from the models), so a
rewrite changes a number only where the model reads it back the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from skyform.plan.planschema import MODELS, OMITTED, REQUIRED

Kind = Any


def _kind_of(kind: Kind) -> tuple[str, Any]:
    """(tag, argument) of a planschema kind: ("money", None), ("model", "Plan") ..."""
    if isinstance(kind, str):
        return kind, None
    if kind[0] == "min":
        return _kind_of(kind[2])
    return kind[0], kind[1]


def walk(value: Any, kind: Kind, visit: Callable[[Any, str], Any]) -> Any:
    """`value` rebuilt bottom-up, `visit(item, scalar kind)` deciding each scalar's new
    form (e.g. a Number token); objects through `visit_object` below."""
    tag, arg = _kind_of(kind)
    if value is None:
        return None
    if tag == "opt":
        return walk(value, arg, visit)
    if tag == "list":
        return [walk(v, arg, visit) for v in value]
    if tag == "dict":
        return {k: walk(v, arg, visit) for k, v in value.items()}
    if tag == "model":
        fields = MODELS[arg]
        out = {k: walk(v, fields[k][0], visit) for k, v in value.items()}
        return visit(out, f"model:{arg}")
    return visit(value, tag)


class Token:
    """A JSON value written as given (`1e0`, `-0`, an escaped string)."""

    def __init__(self, text: str) -> None:
        self.text = text


def emit(value: Any, *, indent: str | None = None, sep: str = ", ", colon: str = ": ") -> str:
    """JSON text of `value`; Token objects verbatim; dict order as given."""

    def go(v: Any, depth: int) -> str:
        if isinstance(v, Token):
            return v.text
        pad = "" if indent is None else "\n" + indent * (depth + 1)
        end = "" if indent is None else "\n" + indent * depth
        if isinstance(v, dict):
            if not v:
                return "{}"
            items = [f"{pad}{json.dumps(k)}{colon}{go(x, depth + 1)}" for k, x in v.items()]
            return "{" + sep.join(items) + end + "}"
        if isinstance(v, list):
            if not v:
                return "[]"
            return "[" + sep.join(pad + go(x, depth + 1) for x in v) + end + "]"
        return json.dumps(v, ensure_ascii=False)

    return go(value, 0)


def _numbers_as(form: Callable[[float | int, str], Any]) -> Callable[[Any, str], Any]:
    def visit(value: Any, tag: str) -> Any:
        if tag in ("int", "float", "money") and not isinstance(value, bool):
            return form(value, tag)
        return value

    return visit


def _float_forms(value: float | int, tag: str) -> Any:
    if tag == "int":
        return Token("-0") if value == 0 else value
    if float(value).is_integer() and value:
        return Token(str(int(value)))  # 2.0 -> 2 (the model reads an int as a float)
    text = repr(float(value))
    if "e" in text:
        return Token(text.upper())  # 1e-07 -> 1E-07
    whole, fraction = text.split(".")
    return Token(f"{(whole + fraction).lstrip('0') or '0'}e-{len(fraction)}")  # 23.5 -> 235e-1


def _money_noise(value: float | int, tag: str) -> Any:
    if tag == "money":
        return Token(repr(value + 4e-8) if value else "-0.0")  # rounded away by the model
    return value


def _escaped(text: str) -> Token:
    return Token('"' + "".join(f"\\u{ord(c):04x}" if c.isascii() else c for c in text) + '"')


def _strings_escaped(value: Any, tag: str) -> Any:
    return _escaped(value) if tag == "str" else value


def _reversed(value: Any, tag: str) -> Any:
    return dict(reversed(list(value.items()))) if tag.startswith("model:") else value


def _defaults_written(value: Any, tag: str) -> Any:
    """Every field the object leaves out written with its default (a field its serializer
    leaves out only when it holds the default is written too: the model reads it back)."""
    if not tag.startswith("model:"):
        return value
    fields = MODELS[tag.removeprefix("model:")]
    out = dict(value)
    for name, (_, default) in fields.items():
        if name not in out and default != REQUIRED:
            out[name] = default
    return out


def _defaults_left_out(value: Any, tag: str) -> Any:
    if not tag.startswith("model:"):
        return value
    name = tag.removeprefix("model:")
    fields = MODELS[name]
    omitted = OMITTED.get(name, {})
    return {
        k: v
        for k, v in value.items()
        if k == "format_version"  # the loader looks for it before anything else
        or not (fields[k][1] != REQUIRED and v == fields[k][1] and k not in omitted)
    }


REWRITES: dict[str, Callable[[Any, str], Any]] = {
    "numbers in other forms": _numbers_as(_float_forms),
    "money with noise the model rounds away": _numbers_as(_money_noise),
    "every string as \\u escapes": _strings_escaped,
    "keys in reverse order": _reversed,
    "defaults written out": _defaults_written,
    "defaults left out": _defaults_left_out,
}
LAYOUTS = {
    "compact": {"sep": ",", "colon": ":"},
    "indented by tabs, CRLF": {"indent": "\t", "sep": ",\r\n", "colon": " :\t"},
}


def _rebuilt(raw: dict, visit: Callable[[Any, str], Any]) -> Any:
    body = {k: v for k, v in raw.items() if k != "digest"}
    out = walk(body, ("model", "Plan"), visit)
    return {**out, "digest": raw["digest"]}


def rewrites(raw: dict) -> Iterator[tuple[str, str]]:
    """(label, text) for each rewrite alone, in each layout, and all of them at once."""
    for label, visit in REWRITES.items():
        yield label, emit(_rebuilt(raw, visit))
    for label, layout in LAYOUTS.items():
        yield label, emit(raw, **layout)
    yield "all at once", all_at_once(raw)


def all_at_once(raw: dict) -> str:
    body = {k: v for k, v in raw.items() if k != "digest"}
    for visit in (_defaults_written, _reversed):
        body = walk(body, ("model", "Plan"), visit)
    body = walk(body, ("model", "Plan"), _money_then_forms)
    body = walk(body, ("model", "Plan"), _strings_escaped)
    return emit({"digest": _escaped(raw["digest"]), **body}, **LAYOUTS["indented by tabs, CRLF"])


def _money_then_forms(value: Any, tag: str) -> Any:
    if tag == "money" and not isinstance(value, bool):
        return _money_noise(value, tag)
    if tag in ("int", "float") and not isinstance(value, bool):
        return _float_forms(value, tag)
    return value
