"""Small text formatters shared by the renderers (plain strings, no rich)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the models, or the strict reader's views of them (plan/planview.py)
    from skyform.plan.model import PlacedOffer, Plan


def usd(value: float, *, hourly: bool = False) -> str:
    """$ with cents for totals; up to 4 decimals for hourly prices, which are often < $0.10."""
    if hourly:
        text = f"{value:,.4f}".rstrip("0")
        text = text + "00" if text.endswith(".") else text
        if len(text.split(".")[1]) < 2:
            text += "0"
        return f"${text}/h"
    return f"${value:,.2f}"


def number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}"


def count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def gpus(offer: PlacedOffer) -> str:
    if not offer.accelerator:
        return "-"
    return f"{offer.accelerator}:{count(offer.accelerator_count)}"


def instance(offer: PlacedOffer) -> str:
    return offer.instance_type + (" [Spot]" if offer.spot else "")


def hours(value: float) -> str:
    return f"{round(value, 2):g} h"


def nodes(n: int) -> str:
    return f"{n} node" + ("" if n == 1 else "s")


def short_digest(digest: str, n: int = 12) -> str:
    algo, _, hexpart = digest.partition(":")
    return f"{algo}:{hexpart[:n]}" if hexpart else digest[:n]


def flags(plan: Plan) -> str:
    """The resource flags a plan was made with, as typed: `--gpus A100:1 --use-spot`."""
    from skyform.spec.overrides import words  # the spec package is not needed to show a plan

    return shlex.join(words(plan.task.overrides))
