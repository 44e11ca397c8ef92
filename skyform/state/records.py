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
from skyform.errors import StateError

RECORD_VERSION = 1  # bump when a record gains a field an older reader would want to know of
VERSION_KEY = "record_version"

M = TypeVar("M", bound=BaseModel)


def dump_record(record: BaseModel) -> str:
    """The JSON stored for a record: its fields and the record version that wrote it."""
    return json.dumps({VERSION_KEY: RECORD_VERSION, **record.model_dump(mode="json")})


def load_record(model: type[M], text: str | bytes, *, what: str) -> M:
    """Read a stored record leniently (unknown fields are ignored at every depth).

    `what` names the record for people, e.g. "cluster 'train'" or "managed job 3"."""
    try:  # the common case, parsed and checked in one pass (status reads thousands)
        return model.model_validate_json(text)
    except ValidationError:
        pass  # an older or newer record, or a damaged one: read it field by field below
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise StateError(
            f"the state record of {what} is not valid JSON ({exc})",
            "The state database was damaged: take the record out by hand, or restore a backup.",
        ) from None
    if not isinstance(data, dict):
        raise StateError(f"the state record of {what} is not a JSON object")
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
        raise StateError(
            f"the state record of {what} is damaged (record version {version}): {problem}",
            "Take the record out of state.db by hand, or restore a backup of it.",
        ) from None


def load_value(model: type[M], value: Any, *, what: str) -> M:
    """A model stored as a JSON column of its own (e.g. a usage interval's offer)."""
    return load_record(model, json.dumps(value), what=what)


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
