"""Text from a plan, a task file or a node, shown as what it is (issue 26).

A terminal acts on control characters: `\\e[1A\\e[2K` in a run script erased the line
above it in `show`, so a reviewer saw `echo harmless` where apply ran `curl … | sh`. Every
renderer passes such text through `visible`: C0 and C1 controls and DEL become escapes
(`\\x1b`, `\\r`, `\\x9b`), as do the bidirectional overrides and isolates that reorder
text in a PR comment (`\\u202e`). Newlines stay where a renderer shows multi-line text
(`lines=True`); tabs stay everywhere: they only move the cursor forward and hide nothing.

Not passed through it: a job's log stream (`logs`, and the output `apply` follows), which
is the user's program talking to the user's terminal — progress bars redraw with `\\r`,
as under SkyPilot — and `--json`, where JSON escapes C0 itself (`json_visible` adds C1,
DEL and the bidi controls, which JSON may carry raw). Pure; no rich.
"""

from __future__ import annotations

import re

_BIDI = "\u202a-\u202e\u2066-\u2069"
_KEPT_IN_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")  # not \t, \n
_ONE_LINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}]")  # not \t
_JSON_RAW = re.compile(f"[\x7f-\x9f{_BIDI}]")  # what json.dumps leaves as it is
NAMED = {"\r": "\\r", "\n": "\\n"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in NAMED:
        return NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, lines: bool = True) -> str:
    """`text` with every control character shown as an escape; newlines kept when `lines`
    (a script, a message), escaped when not (a table cell, a name)."""
    pattern = _KEPT_IN_LINES if lines else _ONE_LINE
    return pattern.sub(_escape, text) if pattern.search(text) else text


def script_lines(text: str | None) -> list[str]:
    """A script's lines as the shell reads them: split at newlines only (`splitlines` also
    splits at `\r`, `\x0b`, `\u2028` ..., which the shell does not: `echo ok\rcurl …`
    is one line, shown with its `\r`)."""
    return text.removesuffix("\n").split("\n") if text else []


def json_visible(text: str) -> str:
    """JSON text with C1, DEL and bidi controls written as `\\u` escapes: the same JSON
    value, harmless on a terminal (they can only occur inside strings)."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
