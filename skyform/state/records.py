"""How records are stored in state.db: versioned JSON, read leniently.

Two versions protect a state across skyform upgrades and downgrades:

- the **schema version** (schema.py, in the `meta` table) numbers the tables. A state whose
  schema is newer than this skyform knows is refused by every command with both numbers and
  what to do (db.py): an older skyform must not change tables it does not understand.
- the **record version** (RECORD_VERSION, stored inside every JSON record as
  `record_version`) numbers the shape of the records. A newer skyform adds fields without a
  new schema; an older one reads such a record with the fields it knows and ignores the rest
  — in nested plan types too, which plan *files* read strictly — so `status`, `plan` or
  `queue` keep working after a downgrade. A record that still does not fit (a field it needs
  is gone, a status it has no name for) is a StateError naming the record, both versions
  and what to do, never a traceback. A record rewritten by an older skyform carries that
  older version, so the newer one knows which fields to fill in again.

Records are untrusted input like every file skyform reads: malformed JSON is a StateError.
"""

from __future__ import annotations

import json
import types
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from skyform import __version__
from skyform.errors import DamagedRecordError, StateError

RECORD_VERSION = 1  # bump when a record gains a field an older reader would want to know of
VERSION_KEY = "record_version"

M = TypeVar("M", bound=BaseModel)


def dump_record(record: BaseModel) -> str:
    """The JSON stored for a record: its fields and the record version that wrote it."""
    return json.dumps({VERSION_KEY: RECORD_VERSION, **record.model_dump(mode="json")})


def load_record(
    model: type[M], text: str | bytes, *, what: str, where: str = "", recover: str = ""
) -> M:
    """Read a stored record leniently (unknown fields are ignored at every depth).

    `what` names the record for people, e.g. "cluster 'train'" or "managed job 3"; `where`
    the database it is in (a damaged record's error starts with it); `recover` what else
    takes a damaged record out (e.g. `skyform down --purge train`)."""
    fault = non_finite(text)
    if fault is not None:  # JSON's NaN / Infinity: pydantic would take them as prices
        raise _damaged(what, where, recover, f"is damaged: {fault}, not a number")
    try:  # the common case, parsed and checked in one pass (status reads thousands)
        return model.model_validate_json(text)
    except ValidationError:
        pass  # an older or newer record, or a damaged one: read it field by field below
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _damaged(what, where, recover, f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _damaged(what, where, recover, "is not a JSON object")
    version = data.pop(VERSION_KEY, 1)
    try:
        return model.model_validate(data)  # the common case: written by this version
    except ValidationError:
        pass
    try:
        return model.model_validate(known_fields(model, data))
    except ValidationError as exc:
        problem = _first_problem(exc)
        if isinstance(version, int) and version > RECORD_VERSION:
            raise StateError(
                f"the state record of {what} was written by a newer skyform (record version "
                f"{version}; skyform {__version__} reads up to {RECORD_VERSION}) and does not "
                f"fit this one: {problem}",
                "Upgrade skyform to the version that wrote this state (pip install -U "
                "skyform), or use this one with another SKYFORM_HOME.",
            ) from None
        raise _damaged(
            what, where, recover, f"is damaged (record version {version}): {problem}"
        ) from None


def _damaged(what: str, where: str, recover: str, said: str) -> DamagedRecordError:
    """`WHERE: the state record of WHAT is ...`, and how to recover."""
    return DamagedRecordError(
        f"{where + ': ' if where else ''}the state record of {what} {said}",
        "skyform changed nothing. Restore the state from a backup"
        + (f", or {recover}" if recover else ", or take the record out of it by hand")
        + ".",
    )


_NON_FINITE = ("NaN", "Infinity")


class _NotANumber:
    def __init__(self, token: str) -> None:
        self.token = token


def non_finite(text: str | bytes) -> str | None:
    """Where the JSON `text` holds NaN or (-)Infinity, as `field.path is NaN` (None: it
    holds none). Python's json writes them and pydantic reads them back as floats."""
    raw = text.decode(errors="replace") if isinstance(text, bytes) else text
    if not any(token in raw for token in _NON_FINITE):
        return None  # the common case: a substring test, no second parse
    try:
        data = json.loads(raw, parse_constant=_NotANumber)
    except ValueError:
        return None  # not JSON at all: said by the reader
    return _find_non_finite(data, "")


def _find_non_finite(value: Any, path: str) -> str | None:
    if isinstance(value, _NotANumber):
        return f"{path or 'the record'} is {value.token}"
    items: Any = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, item in items:
        found = _find_non_finite(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "the record"
    return f"{where}: {error['msg']}"


def known_fields(annotation: Any, value: Any) -> Any:
    """`value` with every key a model of `annotation` does not declare removed, recursively
    through optionals, lists, tuples and dicts."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return known_fields(get_args(annotation)[0], value)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if not isinstance(value, dict):
            return value
        fields = annotation.model_fields
        return {k: known_fields(fields[k].annotation, v) for k, v in value.items() if k in fields}
    if origin in (Union, types.UnionType):
        models = [a for a in get_args(annotation) if _is_model(a)]
        return known_fields(models[0], value) if len(models) == 1 else value
    if origin in (list, set, frozenset, tuple) and isinstance(value, list):
        items = [a for a in get_args(annotation) if a is not Ellipsis]
        if len(items) != 1:  # a fixed-shape tuple: no records inside any of skyform's
            return value
        return [known_fields(items[0], v) for v in value]
    if origin is dict and isinstance(value, dict):
        kv = get_args(annotation)
        return {k: known_fields(kv[1], v) for k, v in value.items()} if kv else value
    return value


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
