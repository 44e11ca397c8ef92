"""Jinja filters: how the pages write money, durations and times (pure)."""

from __future__ import annotations

import datetime as dt


def money(value: float | None, hourly: bool = False) -> str:
    if value is None:
        return "-"
    # cents, unless that rounds a small amount to nothing (a few minutes of a cheap node)
    text = f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"
    return text + ("/h" if hourly else "")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


FILTERS = {"money": money, "duration": duration, "when": when}
