"""A strict plan reader without pydantic, for `show`'s fast path (skyform/cli/fastpath.py):
importing pydantic and building the Plan model is most of a cold `show` (~0.08 s).

It answers only where the app's reader (plan/planfile.py) would read the very same plan,
and otherwise says None, so that the app reads the file again and reports what is wrong in
its own words. A view is returned only when every one of these holds:

- the app's own decoder (planjson.decode) and value bounds (plancheck.check_values) take
  the bytes, and the plan has this skyform's format version;
- every object has exactly the fields its model (plan/planschema.py, generated from the
  models) has, each of the exact JSON type pydantic's strict mode takes — nothing coerced,
  money already rounded, a field left out only where the model's serializer leaves it out:
  then the file is the models' own dump of the plan, so --json prints it unchanged;
- the bytes are the canonical ones (`dumps`) and the content digest is theirs;
- the cross-checks of plancheck.check_plan pass (on the views: the same code);
- the plan needs no rewrite on reading (planfile._with_workdir_flags).

Views carry the models' fields as attributes and their behaviour through the shared mixins
of plan/parts.py, so the renderers draw them as they draw the models.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from skyform.digests import sha256
from skyform.plan import parts
from skyform.plan.planjson import DIGEST_KEY, MAX_DEPTH, MAX_PLAN_BYTES, decode, dumps
from skyform.plan.planschema import FORMAT_VERSION, MODELS, OMITTED, REQUIRED


class Unsure(ValueError):
    """The plan is not one this reader can answer exactly: the app reads it."""


class View:
    """One model's fields, read from a plan file; equal to another view of the same model
    with the same fields, as pydantic models compare."""

    def __init__(self, data: dict[str, Any], fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)
        self._data = data

    def model_dump(self, mode: str = "json") -> dict[str, Any]:
        """The JSON of this part, as the model dumps it (the file's own, checked so)."""
        return copy.deepcopy(self._data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, View) and type(other) is type(self) and other._data == self._data

    __hash__ = None  # type: ignore[assignment]


class OfferView(parts.OfferShape, View):
    pass


class PlacementView(parts.PlacementShape, View):
    pass


class BucketView(parts.BucketShape, View):
    pass


class AutostopView(parts.AutostopShape, View):
    pass


class ClusterSpecView(parts.ClusterShape, View):
    pass


class SummaryView(parts.SummaryShape, View):
    pass


class PlanView(parts.PlanShape, View):
    _plan_dir: str | None = None  # the file's folder: where task.relative_to starts


VIEWS: dict[str, type[View]] = {
    "PlacedOffer": OfferView,
    "BlockedPlacement": PlacementView,
    "PlannedBucket": BucketView,
    "AutostopSetting": AutostopView,
    "ClusterSpec": ClusterSpecView,
    "Summary": SummaryView,
    "Plan": PlanView,
}
SCALARS = {"str": str, "int": int, "float": float, "bool": bool}


def read_view(path: Path) -> tuple[PlanView, bytes] | None:
    """The plan in `path` and its bytes, when the app would read exactly this plan; None
    (nothing printed, nothing raised) when the app must say what it makes of the file."""
    from skyform.errors import PlanFileError
    from skyform.inputfile import read_input_file

    if not os.path.lexists(path):
        return None
    try:
        data = read_input_file(
            path, MAX_PLAN_BYTES, what="a plan file", error=lambda m, h: PlanFileError(m, h)
        )
        view = view_of(data, str(path))
        view._plan_dir = str(path.resolve().parent)  # where task.relative_to starts
        return view, data
    except Exception:  # refused, or a case this reader leaves to the app: the app says which
        return None


def view_of(data: bytes, label: str) -> PlanView:
    """The view of a plan file's bytes; Unsure (or the decoder's refusal) otherwise."""
    from skyform.plan.plancheck import check_plan, check_values

    raw = decode(data, label)
    if not isinstance(raw, dict) or raw.get("format_version") != FORMAT_VERSION:
        raise Unsure("not a plan of this format version")
    if type(raw["format_version"]) is not int or check_values(raw, max_depth=MAX_DEPTH):
        raise Unsure("a value out of bounds")
    recorded = raw.pop(DIGEST_KEY, None)
    if not isinstance(recorded, str) or recorded != sha256(dumps(raw)):
        raise Unsure("no content digest, or not the content's")
    if dumps({**raw, DIGEST_KEY: recorded}) != data:
        raise Unsure("not the canonical bytes")
    plan = plan_view(raw)
    if check_plan(plan) is not None:  # type: ignore[arg-type]
        raise Unsure("a cross-check fails")
    for change in raw.get("changes", []):
        if not change.get("workdir_changed") and any(
            a["path"] == "workdir_files" for a in change["attributes"]
        ):
            raise Unsure("written before changes said workdir_changed: the app rewrites it")
    return plan


def plan_view(raw: dict[str, Any]) -> PlanView:
    """The view of a decoded plan (its digest taken out) whose every field is as its model
    dumps it; Unsure otherwise. No cross-check: view_of runs those."""
    plan = _model("Plan", raw)
    assert isinstance(plan, PlanView)
    return plan


def _model(name: str, value: Any) -> View:
    if type(value) is not dict:
        raise Unsure(f"{name} is not an object")
    fields = MODELS[name]
    if not set(value) <= set(fields):
        raise Unsure(f"{name} has fields the model has not")
    omitted = OMITTED.get(name, {})
    attrs: dict[str, Any] = {}
    for field, (kind, default) in fields.items():
        if field in value:
            left_out = omitted.get(field)
            item = value[field]
            if (left_out == "falsy" and not item) or (left_out == "none" and item is None):
                raise Unsure(f"{name}.{field} is written where the model leaves it out")
            attrs[field] = _value(kind, item)
        elif default == REQUIRED or field not in omitted:
            raise Unsure(f"{name}.{field} is missing where the model writes it")
        else:
            attrs[field] = _value(kind, copy.deepcopy(default))
    return VIEWS.get(name, View)(value, attrs)


def _value(kind: Any, value: Any) -> Any:
    if isinstance(kind, str):
        if kind == "money":
            if type(value) is not float or repr(parts.money(value)) != repr(value):
                raise Unsure("money the model would round")
            return value
        if type(value) is not SCALARS[kind]:
            raise Unsure(f"not a {kind}")
        return value
    tag = kind[0]
    if tag == "opt":
        return None if value is None else _value(kind[1], value)
    if tag == "model":
        return _model(kind[1], value)
    if tag == "list":
        if type(value) is not list:
            raise Unsure("not a list")
        return [_value(kind[1], item) for item in value]
    if tag == "dict":
        if type(value) is not dict:
            raise Unsure("not an object")
        return {key: _value(kind[1], item) for key, item in value.items()}
    if tag == "enum":
        if type(value) is not str or value not in kind[1]:
            raise Unsure("not one of the values")
        return parts.Action(value)
    if tag == "literal":
        if type(value) is not str or value not in kind[1]:
            raise Unsure("not one of the values")
        return value
    if tag == "min":
        checked = _value(kind[2], value)
        if checked < kind[1]:
            raise Unsure("below the model's bound")
        return checked
    raise AssertionError(f"a kind planschema.py does not define: {kind!r}")
