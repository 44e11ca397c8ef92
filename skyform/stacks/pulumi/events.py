"""Pulumi engine events -> one line per resource operation, for the CLI's event sink.

Works on the Automation API's `EngineEvent` objects by attribute (no import of pulumi here).
A line is emitted when an operation finishes or fails, with its duration:
`created node-0 (aws:ec2/instance:Instance) in 41s`. Unchanged resources, providers and the
stack itself stay quiet; error and warning diagnostics are passed on once each, except the
engine's routine notice that a plugin was found on PATH (given on every operation, twice,
when the provider was installed by hand: nothing is wrong).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

DONE = {
    "create": "created",
    "update": "updated",
    "delete": "deleted",
    "replace": "replaced",
    "create-replacement": "created replacement",
    "delete-replaced": "deleted replaced",
    "read": "read",
    "import": "imported",
    "refresh": "refreshed",
    "discard": "forgot",
}
PLANNED = {
    "create": "+ create",
    "update": "~ update",
    "delete": "- delete",
    "replace": "-/+ replace",
    "create-replacement": "+ create replacement",
    "delete-replaced": "- delete replaced",
}
QUIET_OPS = ("same", "read-replacement", "remove-pending-replace", "discard-replaced")
PASSED_ON = {"error": "error", "warning": "warning"}  # diagnostic severity -> line prefix
ROUTINE = re.compile(r"^using pulumi-(resource|language|converter)-\S+ from \$PATH at ")


def resource_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _quiet(metadata: Any) -> bool:
    kind = getattr(metadata, "type", "") or ""
    op = _op(metadata)
    return op in QUIET_OPS or kind == "pulumi:pulumi:Stack" or kind.startswith("pulumi:providers:")


def _op(metadata: Any) -> str:
    op = getattr(metadata, "op", "")
    return str(getattr(op, "value", op))


def _describe(metadata: Any) -> str:
    return f"{resource_name(metadata.urn)} ({metadata.type})"


class EventLines:
    """Turns a stream of engine events into lines for `sink`; also keeps planned changes."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        self.sink = sink
        self.planned: list[str] = []
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self._started: dict[str, float] = {}
        self._lock = threading.Lock()  # the SDK delivers events from worker threads

    def __call__(self, event: Any) -> None:
        with self._lock:
            line = self._line(event)
        if line:
            self.sink(line)

    def _line(self, event: Any) -> str | None:
        pre = getattr(event, "resource_pre_event", None)
        if pre is not None:
            meta = pre.metadata
            if not _quiet(meta):
                self._started[meta.urn] = float(getattr(event, "timestamp", 0) or 0)
                if getattr(pre, "planning", False) and _op(meta) in PLANNED:
                    self.planned.append(f"{PLANNED[_op(meta)]} {_describe(meta)}")
            return None
        done = getattr(event, "res_outputs_event", None)
        if done is not None:
            meta = done.metadata
            if _quiet(meta) or getattr(done, "planning", False):
                return None
            verb = DONE.get(_op(meta), _op(meta))
            return f"{verb} {_describe(meta)}{self._took(meta.urn, event)}"
        failed = getattr(event, "res_op_failed_event", None)
        if failed is not None:
            meta = failed.metadata
            return f"failed to {_op(meta)} {_describe(meta)}{self._took(meta.urn, event)}"
        diag = getattr(event, "diagnostic_event", None)
        if diag is not None:
            return self._diagnostic(getattr(diag, "severity", ""), diag.message or "")
        return None

    def _diagnostic(self, severity: str, text: str) -> str | None:
        prefix = PASSED_ON.get(severity)
        message = " ".join(text.split())
        if prefix is None or not message or ROUTINE.match(message):
            return None
        seen = self.errors if severity == "error" else self.warnings
        if message in seen:
            return None
        seen.append(message)
        return f"{prefix}: {message[:300]}" + ("…" if len(message) > 300 else "")

    def _took(self, urn: str, event: Any) -> str:
        start = self._started.pop(urn, None)
        now = float(getattr(event, "timestamp", 0) or 0)
        if start is None or not now or now < start:
            return ""
        return f" in {now - start:.0f}s"
