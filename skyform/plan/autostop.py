"""A cluster's autostop setting from its task (pure): SkyPilot's `resources.autostop` and the
`skyform:` timers `stop_after` / `down_after`, checked against what the infra can do.

`resources.autostop` sets one timer: `{idle_minutes: N}` stops after N idle minutes, with
`down: true` it tears down instead. `skyform: {stop_after, down_after}` set either timer
(they win over `resources.autostop`'s for their part), so a cluster can stop after 30 idle
minutes and be torn down a week after its last job. 0 minutes become 1, as in SkyPilot: a
timer of 0 would fire before the job is submitted.
"""

from __future__ import annotations

from skyform.errors import PlanError
from skyform.infra import infra
from skyform.plan.model import (
    HOOK_TIMEOUT_DEFAULT,
    WAIT_FOR_DEFAULT,
    AutostopSetting,
    PlacedOffer,
)
from skyform.spec.models import Autostop, SkyformExt


def setting_for(requested: Autostop | None, ext: SkyformExt) -> AutostopSetting | None:
    """The setting a cluster of this task gets, or None (autostop off)."""
    stop = down = None
    wait_for, hook, timeout = WAIT_FOR_DEFAULT, None, HOOK_TIMEOUT_DEFAULT
    if requested is not None and requested.enabled:
        minutes = max(1, requested.idle_minutes)
        if requested.down:
            down = minutes
        else:
            stop = minutes
        wait_for = requested.wait_for or WAIT_FOR_DEFAULT
        hook, timeout = requested.hook, requested.hook_timeout or HOOK_TIMEOUT_DEFAULT
    if ext.stop_after is not None:
        stop = ext.stop_after
    if ext.down_after is not None:
        down = ext.down_after
    if stop is not None and down is not None and down <= stop:
        stop = None  # it would be torn down before (or as) it stops: stopping is moot
    if stop is None and down is None:
        return None
    return AutostopSetting(
        stop_after=stop, down_after=down, wait_for=wait_for, hook=hook, hook_timeout=timeout
    )


def why_not_stoppable(offer: PlacedOffer) -> str | None:
    """Why clusters on this offer cannot be stopped (only torn down), or None (the infra
    table says: SkyPilot's Kubernetes and AWS spot, and local, whose nodes are directories)."""
    row = infra(offer.cloud)
    return row.why_not_stoppable(offer.spot) if row is not None else None


def check_stoppable(cluster: str, setting: AutostopSetting | None, offer: PlacedOffer) -> None:
    """Refuse, at plan time, a stop timer on infra that can only be torn down."""
    if setting is None or setting.stop_after is None:
        return
    why = why_not_stoppable(offer)
    if why is None:
        return
    minutes = setting.stop_after
    raise PlanError(
        f"cluster {cluster!r} on {offer.infra}: autostop would stop it after {minutes} idle "
        f"minute(s), but {why}",
        f"Tear it down instead: 'autostop: {{idle_minutes: {minutes}, down: true}}' in "
        f"resources (or --down on the command line).",
    )
