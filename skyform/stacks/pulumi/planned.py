"""The Pulumi engine's events of a preview -> the resource steps of stacks/preview.py.

Read by attribute from the Automation API's `EngineEvent`s (no import of pulumi here). Each
`resourcePre` event is one step the engine plans for a resource (its URN, type, op). A
replacement arrives as up to three steps of one URN (`delete-replaced`, `replace`,
`create-replacement`, in either order): they are one `replace` here. The stack resource and
the providers are plumbing, not listed. The changed properties come from the step's
`detailedDiff` (property paths, each an add, delete or update, `-replace` when it forces a
replacement), its `keys` (what forces the replacement) and its `diffs` (top-level names);
their values from the step's old and new state, as the engine wrote them: it writes a
secret as a signature and "[secret]", never its value, and so does this module.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from skyform.stacks.preview import (
    SECRET,
    ChangeKind,
    EnginePreview,
    PropertyChange,
    ResourceStep,
    StepOp,
)

OPS: dict[str, StepOp] = {
    "create": "create",
    "update": "update",
    "delete": "delete",
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
    "discard-replaced": "replace",
}
UNCHANGED = "same"
SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # a value known only after the update
KNOWN_LATER = "(known after apply)"
NOISE = ("preview failed", "destroy failed", "update failed")  # the stack's last word
MAX_VALUE = 80  # longer values (scripts, whole specs) are named, not shown
_MISSING = object()
_SEGMENT = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|\[(\d+|\*)\]|\.?([^.\[\]"]+)')


def _text(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


def _plumbing(kind: str) -> bool:
    return kind == "pulumi:pulumi:Stack" or kind.startswith("pulumi:providers:")


def property_path(path: str) -> list[str | int] | None:
    """`spec.ports[2]`, `metadata.labels["skyform/plan"]` -> its keys and indexes; None
    when the path is not in the engine's syntax (its value is then not looked up)."""
    parts: list[str | int] = []
    pos = 0
    while pos < len(path):
        match = _SEGMENT.match(path, pos)
        if match is None or match.end() == pos:
            return None
        quoted, index, bare = match.groups()
        if quoted is not None:
            try:
                parts.append(json.loads(f'"{quoted}"'))
            except ValueError:
                return None
        elif index is not None:
            if index == "*":
                return None
            parts.append(int(index))
        else:
            parts.append(bare)
        pos = match.end()
    return parts


def _secret(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get(SECRET_SIG[0]) == SECRET_SIG[1]
    return value == SECRET


def _child(value: Any, key: str | int) -> Any:
    if isinstance(value, dict) and isinstance(key, str):
        return value.get(key, _MISSING)
    if isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
        return value[key]
    return _MISSING


def _lookup(state: Any, path: list[str | int] | None) -> Any:
    """The value at `path` in a step's old or new state (inputs first, then outputs):
    `SECRET` as soon as the way there crosses a secret; _MISSING when it is not there."""
    if state is None or path is None:
        return _MISSING
    for where in ("inputs", "outputs"):
        value: Any = getattr(state, where, None)
        for key in path:
            if _secret(value):
                return SECRET
            value = _child(value, key)
            if value is _MISSING:
                break
        if value is not _MISSING:
            return SECRET if _secret(value) else value
    return _MISSING


def value_text(value: Any) -> str | None:
    """A value as the preview shows it: short scalars as JSON, "[secret]", "(known after
    apply)"; None for what is not shown (absent, a list or object, a long text)."""
    if value is _MISSING or isinstance(value, (dict, list)):
        return None
    if value == SECRET:
        return SECRET
    if value == UNKNOWN:
        return KNOWN_LATER
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE else None


def _kind(raw: str) -> ChangeKind:
    return "add" if raw == "add" else "delete" if raw == "delete" else "update"


def _kinds(meta: Any) -> dict[str, tuple[ChangeKind, bool]]:
    """path -> (add | delete | update, forces replacement)."""
    keys = [str(k) for k in getattr(meta, "keys", None) or []]
    found: dict[str, tuple[ChangeKind, bool]] = {}
    for path, diff in (getattr(meta, "detailed_diff", None) or {}).items():
        kind, _, replaces = _text(getattr(diff, "diff_kind", "")).partition("-")
        found[str(path)] = (_kind(kind), bool(replaces) or str(path) in keys)
    for path in keys:
        found.setdefault(path, ("update", True))
    for path in getattr(meta, "diffs", None) or []:
        if not any(p == path or p.startswith((f"{path}.", f"{path}[")) for p in found):
            found[str(path)] = ("update", str(path) in keys)
    return found


def properties(meta: Any) -> list[PropertyChange]:
    changes = []
    for path, (kind, replaces) in sorted(_kinds(meta).items()):
        parsed = property_path(path)
        old = None if kind == "add" else value_text(_lookup(getattr(meta, "old", None), parsed))
        new = None if kind == "delete" else value_text(_lookup(getattr(meta, "new", None), parsed))
        changes.append(PropertyChange(path=path, kind=kind, replaces=replaces, old=old, new=new))
    return changes


class PlannedSteps:
    """Collects a preview's steps from its event stream (`on_event`), and the engine's error
    messages; `preview()` says what it has gathered, also after the engine failed partway."""

    def __init__(self) -> None:
        self._steps: dict[str, ResourceStep] = {}
        self._unchanged: set[str] = set()
        self.errors: list[str] = []  # each error diagnostic once, in the engine's order
        self._lock = threading.Lock()  # the SDK delivers events from worker threads

    def __call__(self, event: Any) -> None:
        diagnostic = getattr(event, "diagnostic_event", None)
        if diagnostic is not None and _text(getattr(diagnostic, "severity", "")) == "error":
            with self._lock:
                self._error(_text(getattr(diagnostic, "message", "")))
            return
        pre = getattr(event, "resource_pre_event", None)
        meta = getattr(pre, "metadata", None)
        if meta is None or _plumbing(str(getattr(meta, "type", ""))):
            return
        with self._lock:
            self._add(meta)

    def _error(self, message: str) -> None:
        text = " ".join(message.split())
        if text and text.lower() not in NOISE and text not in self.errors:
            self.errors.append(text)

    def _add(self, meta: Any) -> None:
        urn, op = str(meta.urn), _text(meta.op)
        if op == UNCHANGED:
            self._unchanged.add(urn)
            return
        step_op = OPS.get(op)
        if step_op is None:  # read, refresh, import: not a change apply makes
            return
        known = self._steps.get(urn)
        merged = {p.path: p for p in known.properties} if known is not None else {}
        for change in properties(meta):
            seen = merged.get(change.path)
            if seen is None or (change.replaces and not seen.replaces):
                merged[change.path] = change
        if known is not None and known.op == "replace":
            step_op = "replace"
        self._steps[urn] = ResourceStep(
            op=step_op,
            type=str(meta.type),
            name=urn.rsplit("::", 1)[-1],
            urn=urn,
            properties=[merged[p] for p in sorted(merged)],
        )

    def preview(self, failure: str = "") -> EnginePreview:
        with self._lock:
            steps = sorted(self._steps.values(), key=lambda s: (s.type, s.name, s.urn))
            unchanged = len(self._unchanged - set(self._steps))
        return EnginePreview(steps=steps, unchanged=unchanged, failure=failure)

    @property
    def empty(self) -> bool:
        with self._lock:
            return not self._steps
