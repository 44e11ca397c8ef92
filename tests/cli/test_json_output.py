"""Every `--json` prints what json.dumps(data, indent=2, sort_keys=True, default=str) writes,
byte for byte (cli/render/output.py lays it out faster: `status --json` of 1,000 clusters)."""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from skyform.cli.render.output import dumps


class Color(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


def reference(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str)


def outcome(write, data) -> str:
    """The text, or the kind of error (keys json cannot sort or encode)."""
    try:
        return write(data)
    except TypeError:
        return "TypeError"


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)  # newlines, quotes, braces, non-ASCII
    | st.sampled_from([Color.RED, Level.HIGH, math.pi, '{"}\n{', "é名"])
)
keys = st.text(max_size=5) | st.integers() | st.sampled_from([Color.RED])
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        | st.dictionaries(st.integers(), inner, max_size=3)
        | st.dictionaries(keys, inner, max_size=3).map(OrderedDict)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_the_text_is_what_json_dumps_writes(data):
    assert outcome(dumps, data) == outcome(reference, data)


def test_keys_of_every_json_type_and_values_json_cannot_encode():
    data = {
        "when": object.__new__(type("Stamp", (), {"__str__": lambda self: "12:00"})),
        "keys": [{1.5: "f", 2.5: "g"}, {True: "t", False: "f"}, {None: "n"}, {Color.RED: "e"}],
        "flat": {"a": [], "b": {}, "c": float("-inf")},
        "rows": [{"job": 1, "exit_codes": {}}, {"job": 2, "exit_codes": {"0": 0}}],
    }
    assert dumps(data) == reference(data)
    assert outcome(dumps, {1: "i", "s": "s"}) == "TypeError" == outcome(reference, {1: 2, "s": 3})
