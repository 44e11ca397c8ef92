"""Errors that point at the file, line, column and field, with a hint.

`Where` ties a document's position map to the file label; every parser in this package
reports through it. Pydantic's ValidationError is translated here too, so users see
"unknown key 'rn' ... did you mean 'run'?" instead of pydantic's own wording.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path as PathLib
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from skyform.errors import SpecError, UnsupportedError
from skyform.spec.yamlpos import Document, Path

M = TypeVar("M", bound=BaseModel)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class BadValue(ValueError):
    """A value is wrong; the caller knows where it is and turns this into a SpecError."""

    def __init__(self, message: str, hint: str | None = None, *, unsupported: bool = False):
        super().__init__(message)
        self.hint = hint
        self.unsupported = unsupported


def field_name(path: Path) -> str:
    """`resources.any_of[0].cpus`; keys that are not identifiers are quoted: `file_mounts['/x']`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest choice: a near spelling, a case variant, or the one choice it begins."""
    options = list(choices)
    matches = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if matches:
        return matches[0]
    lowered = {c.lower(): c for c in options}
    if word.lower() in lowered:
        return lowered[word.lower()]
    prefixed = [c for c in options if word and c.lower().startswith(word.lower())]
    return prefixed[0] if len(prefixed) == 1 else None


def describe(value: Any) -> str:
    """How a YAML value reads back to the user: `null`, `true`, `integer 5`, `list [...]`."""
    if value is None:
        return "null (an empty value)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value:g}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


@dataclass
class Where:
    """Positions of one YAML document in one file. `base`: where its relative paths start
    (None: the current directory); `resolved` collects the relative paths made absolute."""

    label: str
    doc: Document
    base: PathLib | None = None
    resolved: list[str] = field(default_factory=list)
    # unknown keys met so far, reported together (raise_unknown) rather than one a run
    unknown: list[SpecError] = field(default_factory=list)

    def error(
        self,
        path: Path,
        message: str,
        hint: str | None = None,
        *,
        at_key: bool = False,
        unsupported: bool = False,
    ) -> SpecError:
        pos = self.doc.pos(path)
        line = column = None
        if pos is not None:
            line, column = pos.line, pos.column
            if at_key and pos.key_line is not None:
                line, column = pos.key_line, pos.key_column
        cls = UnsupportedError if unsupported else SpecError
        return cls(
            message,
            hint,
            path=self.label,
            line=line,
            column=column,
            field=field_name(path) or None,
        )

    def fail(self, path: Path, message: str, hint: str | None = None, **kw: Any) -> NoReturn:
        raise self.error(path, message, hint, **kw)

    def problem(self, path: Path, exc: BadValue) -> SpecError:
        return self.error(path, str(exc), exc.hint, unsupported=exc.unsupported)

    def line(self, path: Path) -> int | None:
        pos = self.doc.pos(path)
        if pos is None:
            return None
        return pos.key_line if pos.key_line is not None else pos.line

    def validate(self, model: type[M], data: Any, path: Path) -> M:
        """Validate raw YAML data with a pydantic model; the first error (in file order) wins.
        Unknown keys are noted (`unknown`) and left out, so the rest of the file is read and
        every unknown key is reported at once."""
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            extra = [e for e in errors if e["type"] == "extra_forbidden"]
            self.unknown += [self._translate_one(err, model, path) for err in extra]
            if extra and len(extra) == len(errors) and isinstance(data, dict):
                trimmed = copy.deepcopy(data)
                for err in extra:
                    _drop(trimmed, err["loc"])
                return self.validate(model, trimmed, path)
            raise self._translate(exc, model, data, path) from None

    def _translate_one(self, err: ErrorDetails, model: type[BaseModel], path: Path) -> SpecError:
        loc = (*path, *err["loc"])
        key = str(err["loc"][-1])
        owner = _owner_model(model, err["loc"][:-1])
        known = sorted(_keys(owner)) if owner else []
        guess = did_you_mean(key, known)
        where = field_name(loc[:-1]) or "the task"
        hint = f"Did you mean '{guess}'?" if guess else None
        if known:
            listed = ", ".join(known)
            hint = f"{hint + ' ' if hint else ''}Allowed keys in {where}: {listed}."
        return self.error(loc, f"unknown key '{key}'", hint, at_key=True)

    def _translate(
        self, exc: ValidationError, model: type[BaseModel], data: Any, path: Path
    ) -> SpecError:
        errors = exc.errors(include_url=False)

        def order(err: ErrorDetails) -> tuple[int, int]:
            pos = self.doc.pos((*path, *err["loc"]))
            return (pos.line, pos.column) if pos else (0, 0)

        err = min(errors, key=order)
        loc = (*path, *err["loc"])
        kind = err["type"]
        value = err.get("input")
        if kind == "extra_forbidden":
            return self._translate_one(err, model, path)
        if kind == "missing":
            return self.error(loc[:-1], f"missing required key '{loc[-1]}'")
        bound = _BOUNDS.get(kind)
        if bound:
            text, key = bound
            limit = (err.get("ctx") or {}).get(key)
            return self.error(loc, f"{field_name(loc[-1:])} must be {text} {limit}, got {value}")
        expected = _EXPECTED.get(kind)
        if expected:
            hint = "Fill in a value or remove the key." if value is None else None
            return self.error(loc, f"expected {expected}, got {describe(value)}", hint)
        message = str(err.get("msg", "invalid value"))
        message = message.removeprefix("Value error, ")
        return self.error(loc, f"{message[:1].lower()}{message[1:]}")


def _drop(data: dict, loc: Sequence[Any]) -> None:
    """Remove the value at `loc` (keys and list indexes) from nested YAML data."""
    node: Any = data
    for part in loc[:-1]:
        node = node[part]
    if isinstance(node, dict):
        node.pop(loc[-1], None)


def unknown_keys_error(found: Sequence[SpecError]) -> SpecError:
    """One error for every unknown key of a file, at the first; one key reads as before."""
    unique = {(e.path, e.line, e.column, e.message): e for e in found}
    ordered = sorted(unique.values(), key=lambda e: (e.path or "", e.line or 0, e.column or 0))
    first = ordered[0]
    if len(ordered) == 1:
        return first
    listed = "; ".join(
        f"'{e.field}' (line {e.line})" + (f": {_guess(e.hint)}" if _guess(e.hint) else "")
        for e in ordered
    )
    return SpecError(
        f"{len(ordered)} unknown keys: {listed}",
        "Rename or remove each (SkyPilot's schema does not have them).",
        path=first.path,
        line=first.line,
        column=first.column,
        field=first.field,
    )


def _guess(hint: str | None) -> str:
    found = re.match(r"Did you mean '([^']+)'\?", hint or "")
    return f"did you mean '{found.group(1)}'?" if found else ""


_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "tuple_type": "a list",
}


_BOUNDS = {
    "greater_than_equal": ("at least", "ge"),
    "less_than_equal": ("at most", "le"),
    "greater_than": ("greater than", "gt"),
    "less_than": ("less than", "lt"),
}


def _keys(model: type[BaseModel]) -> set[str]:
    """Keys worth listing in a hint (compat-only keys are accepted but not advertised)."""
    names = set()
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("listed") is False:
            continue
        names.add(info.alias or name)
    return names


def _owner_model(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model class that owns the mapping at `loc` (to list its keys)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None or isinstance(part, int):
            continue
        info = current.model_fields.get(str(part))
        current = _model_in(info.annotation) if info else None
    return current


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None
