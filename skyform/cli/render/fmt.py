"""Small text formatters shared by the renderers (plain strings, no rich)."""

from __future__ import annotations

import math
import shlex
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # `status` formats offers without loading the models
    from skyform.plan.model import Plan


class OfferText(Protocol):
    """What the formatters read of an offer (a PlacedOffer, or status's plain OfferRow)."""

    @property
    def instance_type(self) -> str: ...
    @property
    def spot(self) -> bool: ...
    @property
    def accelerator(self) -> str | None: ...
    @property
    def accelerator_count(self) -> float: ...


# SkyPilot's clusters have no autostop unless asked (`-i`, `resources.autostop`): a plan says
# what that costs
NO_AUTOSTOP = "none: bills until `skyform down` (set -i MINUTES or resources.autostop)"


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
    return plain(value)


def plain(value: float, digits: int = 6) -> str:
    """`value` to `digits` significant digits, as `:g` but never in scientific notation
    (a plan says 0.00005 GB and 12000000 s, not 5e-05 and 1.2e+07)."""
    text = f"{value:.{digits}g}"
    if "e" not in text or not math.isfinite(value):
        return text
    return format(Decimal(text), "f")


def count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else plain(value)


def gpus(offer: OfferText) -> str:
    if not offer.accelerator:
        return "-"
    return f"{offer.accelerator}:{count(offer.accelerator_count)}"


def instance(offer: OfferText) -> str:
    return offer.instance_type + (" [Spot]" if offer.spot else "")


def hours(value: float) -> str:
    return f"{plain(round(value, 2))} h"


def nodes(n: int) -> str:
    return f"{n} node" + ("" if n == 1 else "s")


def short_digest(digest: str, n: int = 12) -> str:
    algo, _, hexpart = digest.partition(":")
    return f"{algo}:{hexpart[:n]}" if hexpart else digest[:n]


def flags(plan: Plan) -> str:
    """The resource flags a plan was made with, as typed: `--gpus A100:1 --use-spot`."""
    from skyform.spec.overrides import words  # the spec package is not needed to show a plan

    return shlex.join(words(plan.task.overrides))
