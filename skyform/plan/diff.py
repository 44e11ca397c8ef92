"""Desired clusters vs current state → one ClusterChange per cluster (pure).

Rules, in order:
- not in state (or recorded as gone)                     → create
- its nodes were lost (LOST) or its stack is gone (GONE) → replace
- an attribute that the infra cannot change in place     → replace, naming the attribute
- its last apply never finished (INIT), or its setup
  failed (SETUP_FAILED), and the job is unchanged        → update: apply carries on where it
                                                           stopped (keeping the nodes that
                                                           are there), setup and job run again
- only ports/labels (in place) or the job (setup, run,
  envs, workdir, file mounts) changed                    → update
- nothing changed                                        → noop
- in state, owned by this task file, no longer desired   → delete (and every owned cluster
                                                           with `destroy=True`)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from skyform.plan.model import Action, AttributeChange, ClusterChange, ClusterSpec

# Attributes whose change means a new cluster: (path, getter).
REPLACE_ATTRS: tuple[tuple[str, object], ...] = (
    ("infra", lambda s: s.offer.infra),
    ("instance_type", lambda s: s.offer.instance_type),
    ("spot", lambda s: _fmt(s.offer.spot)),
    ("accelerators", lambda s: _accels(s)),
    ("num_nodes", lambda s: str(s.num_nodes)),
    ("disk_size", lambda s: f"{s.disk_size} GB"),
    ("disk_tier", lambda s: s.disk_tier),
    ("network_tier", lambda s: s.network_tier),
    ("image_id", lambda s: s.image_id),
)
IN_PLACE_ATTRS: tuple[tuple[str, object], ...] = (
    ("ports", lambda s: ", ".join(s.ports) or None),
    ("labels", lambda s: ", ".join(f"{k}={v}" for k, v in sorted(s.labels.items())) or None),
)
JOB_ATTRS: tuple[tuple[str, object], ...] = (
    ("setup", lambda s: s.setup_digest),
    ("job", lambda s: s.job_digest),
)
# Clusters in these states are rebuilt whatever the spec says (Terraform's "tainted").
REBUILD_REASONS = {
    "LOST": "its nodes were lost (preempted or dead): the cluster is rebuilt",
    "GONE": "its Pulumi stack has no nodes any more (destroyed outside skyform?): "
    "the cluster is rebuilt",
}
# Unlike Terraform's tainted resources, a cluster whose apply was interrupted is carried on
# with, not rebuilt: its nodes are usually fine, and provisioning is the slow, costly part.
UNFINISHED = "INIT"
SETUP_FAILED = "SETUP_FAILED"  # up, but its setup never completed (the job FAILED_SETUP)
CARRY_ON_REASONS = {
    UNFINISHED: "the last apply did not finish (status INIT): it carries on where it "
    "stopped, keeping the nodes that are there; setup and the job run again",
    SETUP_FAILED: "its setup did not complete (the last job ended FAILED_SETUP): setup and "
    "the job run again",
}


class CurrentCluster(BaseModel):
    """What state knows about a cluster (built by the state layer)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    spec: ClusterSpec
    status: str = "UP"
    source: str | None = None  # the task file (as planned) that owns it


def _fmt(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _accels(spec: ClusterSpec) -> str | None:
    return ", ".join(f"{k}:{v:g}" for k, v in spec.offer.accelerators.items()) or None


def _changes(
    before: ClusterSpec, after: ClusterSpec, attrs: Iterable[tuple[str, object]], forces: bool
) -> list[AttributeChange]:
    found = []
    for path, get in attrs:
        old, new = get(before), get(after)  # type: ignore[operator]
        if old != new:
            found.append(
                AttributeChange(path=path, before=old, after=new, forces_replacement=forces)
            )
    return found


def _job_reason(job_changes: list[AttributeChange]) -> str:
    names = {c.path for c in job_changes}
    if "setup" in names:
        return "setup changed: setup and the job will run again"
    return "the job changed (run, envs, workdir or file mounts): it will run again"


def diff_cluster(desired: ClusterSpec, current: CurrentCluster | None) -> ClusterChange:
    name = desired.name
    if current is None:
        return ClusterChange(
            cluster=name, action=Action.CREATE, reason="new cluster", after=desired
        )
    before = current.spec
    replace = _changes(before, desired, REPLACE_ATTRS, forces=True)
    in_place = _changes(before, desired, IN_PLACE_ATTRS, forces=False)
    job = _changes(before, desired, JOB_ATTRS, forces=False)
    attributes = replace + in_place + job
    if current.status in REBUILD_REASONS:
        return ClusterChange(
            cluster=name,
            action=Action.REPLACE,
            before=before,
            after=desired,
            reason=REBUILD_REASONS[current.status],
            attributes=attributes,
        )
    if replace:
        first = replace[0]
        reason = (
            f"{first.path} {first.before or 'none'} → {first.after or 'none'} forces replacement"
        )
        return ClusterChange(
            cluster=name,
            action=Action.REPLACE,
            reason=reason,
            before=before,
            after=desired,
            attributes=attributes,
        )
    # (a failed setup edited since is an ordinary update: the edit is the news)
    if current.status == UNFINISHED or (current.status == SETUP_FAILED and not job):
        return ClusterChange(
            cluster=name,
            action=Action.UPDATE,
            reason=CARRY_ON_REASONS[current.status],
            before=before,
            after=desired,
            attributes=attributes,
        )
    if in_place or job:
        parts = [f"{c.path} changed" for c in in_place] + ([_job_reason(job)] if job else [])
        return ClusterChange(
            cluster=name,
            action=Action.UPDATE,
            reason="; ".join(parts),
            before=before,
            after=desired,
            attributes=attributes,
        )
    return ClusterChange(
        cluster=name, action=Action.NOOP, reason="up to date", before=before, after=desired
    )


def diff_clusters(
    desired: Iterable[ClusterSpec],
    current: Mapping[str, CurrentCluster],
    *,
    source: str | None = None,
    destroy: bool = False,
) -> list[ClusterChange]:
    """Changes for every desired cluster (in the given order), then deletions by name.

    Deletions: with `destroy`, every desired cluster that exists; otherwise clusters in state
    owned by `source` that are no longer desired (a task removed from a pipeline).
    """
    desired = list(desired)
    wanted = {spec.name for spec in desired}
    if destroy:
        return [
            ClusterChange(
                cluster=spec.name,
                action=Action.DELETE,
                reason="destroy requested",
                before=current[spec.name].spec,
            )
            for spec in desired
            if spec.name in current
        ]
    changes = [diff_cluster(spec, current.get(spec.name)) for spec in desired]
    orphans = sorted(
        name
        for name, cur in current.items()
        if name not in wanted and source is not None and cur.source == source
    )
    changes += [
        ClusterChange(
            cluster=name,
            action=Action.DELETE,
            before=current[name].spec,
            reason=f"no longer in {source}",
        )
        for name in orphans
    ]
    return changes


def count_actions(changes: Iterable[ClusterChange]) -> tuple[int, int, int]:
    """(to add, to change, to destroy) as Terraform counts them: replace = add + destroy."""
    add = change = destroy = 0
    for c in changes:
        add += c.action in (Action.CREATE, Action.REPLACE)
        change += c.action is Action.UPDATE
        destroy += c.action in (Action.DELETE, Action.REPLACE)
    return add, change, destroy
