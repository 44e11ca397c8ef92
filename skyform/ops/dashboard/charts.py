"""Inline SVG charts as data: the template draws the shapes, the page's script redraws the
same shapes from the series endpoint (pure; no chart library)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT, PAD = 600.0, 160.0, 4.0


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str  # the tooltip: the category and its value
    name: str  # the category, written under the bar when it fits


@dataclass(frozen=True)
class LineChart:
    points: str  # an SVG polyline's points
    top: float  # the value at the top of the chart
    count: int  # how many samples are drawn


def bars(values: Sequence[tuple[str, float]], unit: str = "") -> list[Bar]:
    """One bar per (label, value), scaled to the largest."""
    if not values:
        return []
    top = max(v for _, v in values) or 1.0
    step = (WIDTH - 2 * PAD) / len(values)
    out = []
    for i, (label, value) in enumerate(values):
        h = (HEIGHT - 2 * PAD) * max(0.0, value) / top
        out.append(
            Bar(
                PAD + i * step,
                HEIGHT - PAD - h,
                max(1.0, step * 0.8),
                h,
                f"{label}: {value:.4g}{unit}",
                label if step >= 8 * len(label) else "",
            )
        )
    return out


def line(samples: Sequence[tuple[float, float]]) -> LineChart:
    """(time, value) samples as a polyline across the chart, oldest at the left."""
    if not samples:
        return LineChart("", 0.0, 0)
    t0, t1 = samples[0][0], samples[-1][0]
    span = (t1 - t0) or 1.0
    top = max(v for _, v in samples) or 1.0
    pts = []
    for t, v in samples:
        x = PAD + (WIDTH - 2 * PAD) * (t - t0) / span
        y = HEIGHT - PAD - (HEIGHT - 2 * PAD) * max(0.0, v) / top
        pts.append(f"{x:.1f},{y:.1f}")
    return LineChart(" ".join(pts), top, len(samples))
