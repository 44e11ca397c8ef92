"""What applying a planned change does to a cluster that stays (pure).

Read from the change's typed fields — `action`, the specs `before` and `after`, and
`workdir_changed` — never from `attributes`, which are the plan's words for people: a plan
whose attribute lines were reworded applies the same way (plan/model.py's contract).
"""

from __future__ import annotations

from skyform.plan.diff import in_place_changes
from skyform.plan.model import ClusterChange

AGENT_SETTINGS = frozenset({"autostop"})  # the node agent takes these, not the stack


def in_place_updates(change: ClusterChange) -> frozenset[str]:
    """The attributes (`ports`, `labels`, `autostop`) updated on the cluster's nodes."""
    if change.before is None or change.after is None:
        return frozenset()
    return frozenset(c.path for c in in_place_changes(change.before, change.after))


def stack_updates(change: ClusterChange) -> frozenset[str]:
    """The in-place updates its infrastructure (stack) makes, as opposed to the node agent."""
    return in_place_updates(change) - AGENT_SETTINGS


def job_runs_again(change: ClusterChange) -> bool:
    """The job changed (its setup or job digest, or the files its workdir sync sends)."""
    before, after = change.before, change.after
    if after is None:
        return False
    if before is None:
        return True
    digests = (before.setup_digest, before.job_digest) != (after.setup_digest, after.job_digest)
    return digests or change.workdir_changed
