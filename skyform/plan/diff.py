"""Desired clusters vs current state → one ClusterChange per cluster (pure).

Rules, in order:
- not in state (or recorded as gone)                     → create
- its nodes were lost (LOST) or its stack is gone (GONE) → replace
- an attribute that the infra cannot change in place     → replace, naming the attribute
- its last apply never finished (INIT), or its setup
  failed (SETUP_FAILED), and the job is unchanged        → update: apply carries on where it
                                                           stopped (keeping the nodes that
                                                           are there), setup and job run again
- only ports/labels/autostop (in place) or the job (setup, run,
  envs, workdir and its files, file mounts) changed      → update (jobdiff.py says what)
- a bucket mount must be attached again on its nodes
  (a COPY refresh, a MOUNT found missing)                 → update (mountdiff.py says which)
- nothing changed                                        → noop

A plan touches only the clusters it names. A cluster made from this task file that the plan
does not name (another `-c`, a task since removed from a pipeline) is listed as untouched,
never destroyed: destroying is `skyform down` or `plan --destroy`. A named cluster that
belongs to another task file or a managed job is marked `takes_over` (ownership.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from skyform.plan.jobdiff import job_changes, workdir_changed
from skyform.plan.model import (
    Action,
    AttributeChange,
    ClusterChange,
    ClusterSpec,
    JobSpec,
    UntouchedCluster,
    WorkdirFiles,
)
from skyform.plan.mountdiff import attach_again
from skyform.plan.ownership import Owner, Relation, describe_owner, relation

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
    # the node agent takes a new setting in place (and restarts its countdown)
    ("autostop", lambda s: s.autostop.text if s.autostop else None),
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
    source: str | None = None  # the task file that owns it (ownership.py)
    managed_job: int | None = None  # an unfinished managed job runs on it
    job: JobSpec | None = None  # the job last started on it by apply
    workdir_files: WorkdirFiles | None = None  # what that job's workdir sync sent

    def relation(self, owner: Owner | None) -> Relation:
        return relation(self.source, self.managed_job, owner)

    @property
    def owner_text(self) -> str:
        return describe_owner(self.source, self.managed_job)


def _fmt(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _accels(spec: ClusterSpec) -> str | None:
    return ", ".join(f"{k}:{v:g}" for k, v in spec.offer.accelerators.items()) or None


def in_place_changes(before: ClusterSpec, after: ClusterSpec) -> list[AttributeChange]:
    """What changes on a cluster that keeps its nodes (ports, labels, autostop)."""
    return _changes(before, after, IN_PLACE_ATTRS, forces=False)


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


def diff_cluster(
    desired: ClusterSpec,
    current: CurrentCluster | None,
    *,
    job: JobSpec | None = None,
    workdir_files: WorkdirFiles | None = None,
    owner: Owner | None = None,
    refresh: Mapping[str, str] | None = None,
    detached: Mapping[str, str] | None = None,
) -> ClusterChange:
    """`refresh` and `detached`: the bucket mounts to attach again (mountdiff.py)."""
    name = desired.name
    if current is None:
        return ClusterChange(
            cluster=name, action=Action.CREATE, reason="new cluster", after=desired
        )
    before = current.spec
    takes_over = current.owner_text if current.relation(owner) is Relation.OTHER else None
    replace = _changes(before, desired, REPLACE_ATTRS, forces=True)
    in_place = in_place_changes(before, desired)
    job_attrs, job_reason = job_changes(
        before,
        desired,
        before_job=current.job,
        after_job=job,
        before_files=current.workdir_files,
        after_files=workdir_files,
    )
    attributes = replace + in_place + job_attrs
    workdir = workdir_changed(current.workdir_files, workdir_files)

    def change(action: Action, reason: str) -> ClusterChange:
        acts = action is not Action.NOOP
        return ClusterChange(
            cluster=name,
            action=action,
            reason=reason,
            before=before,
            after=desired,
            attributes=attributes if acts else [],
            takes_over=takes_over if acts else None,
            workdir_changed=workdir and acts,
        )

    if current.status in REBUILD_REASONS:
        return change(Action.REPLACE, REBUILD_REASONS[current.status])
    if replace:
        first = replace[0]
        return change(
            Action.REPLACE,
            f"{first.path} {first.before or 'none'} → {first.after or 'none'} forces replacement",
        )
    # (a failed setup edited since is an ordinary update: the edit is the news)
    if current.status == UNFINISHED or (current.status == SETUP_FAILED and not job_attrs):
        return change(Action.UPDATE, CARRY_ON_REASONS[current.status])
    again, again_attrs, again_reason = attach_again(refresh or {}, detached or {}, current.job, job)
    if in_place or job_attrs or again:
        parts = [f"{c.path} changed" for c in in_place] + ([job_reason] if job_reason else [])
        updated = change(Action.UPDATE, "; ".join(parts + ([again_reason] if again_reason else [])))
        if not again:
            return updated
        return updated.model_copy(
            update={"attach_again": again, "attributes": updated.attributes + again_attrs}
        )
    return change(Action.NOOP, "up to date")


def diff_clusters(
    desired: Iterable[ClusterSpec],
    current: Mapping[str, CurrentCluster],
    *,
    owner: Owner | None = None,
    jobs: Mapping[str, JobSpec] | None = None,
    workdirs: Mapping[str, WorkdirFiles] | None = None,
    refresh: Mapping[str, Mapping[str, str]] | None = None,
    detached: Mapping[str, Mapping[str, str]] | None = None,
) -> list[ClusterChange]:
    """Changes for every desired cluster, in the given order; never a deletion. `refresh`
    and `detached` are per cluster (diff_cluster)."""
    jobs, workdirs = jobs or {}, workdirs or {}
    refresh, detached = refresh or {}, detached or {}
    return [
        diff_cluster(
            spec,
            current.get(spec.name),
            job=jobs.get(spec.name),
            workdir_files=workdirs.get(spec.name),
            owner=owner,
            refresh=refresh.get(spec.name),
            detached=detached.get(spec.name),
        )
        for spec in desired
    ]


def destroy_changes(
    names: Iterable[str],
    current: Mapping[str, CurrentCluster],
    *,
    owner: Owner | None,
    everything_owned: bool,
) -> tuple[list[ClusterChange], list[UntouchedCluster]]:
    """`plan --destroy`: the named clusters that exist, and (`everything_owned`, i.e. no `-c`)
    every other cluster made from this task file. A cluster that belongs to another task file
    or to a managed job is never destroyed from here: it is listed as untouched."""
    named = [n for n in dict.fromkeys(names) if n in current]
    owned = [n for n, c in sorted(current.items()) if c.relation(owner) is Relation.MINE]
    targets = named + [n for n in owned if everything_owned and n not in named]
    changes, untouched = [], []
    for name in targets:
        cur = current[name]
        if cur.relation(owner) is Relation.OTHER:
            untouched.append(
                UntouchedCluster(
                    cluster=name,
                    reason=f"belongs to {cur.owner_text}, not to this task file: not destroyed "
                    f"(`skyform down {name}` removes it)",
                )
            )
            continue
        reason = "destroy requested" if name in named else "made from this task file"
        changes.append(
            ClusterChange(cluster=name, action=Action.DELETE, reason=reason, before=cur.spec)
        )
    return changes, untouched


def untouched_clusters(
    wanted: Iterable[str], current: Mapping[str, CurrentCluster], owner: Owner | None
) -> list[UntouchedCluster]:
    """Clusters made from this task file that this plan does not name: left as they are."""
    names = set(wanted)
    return [
        UntouchedCluster(
            cluster=name,
            reason="made from this task file but not named by this plan: left as it is "
            f"(`skyform down {name}` removes it)",
        )
        for name, cur in sorted(current.items())
        if name not in names and cur.relation(owner) is Relation.MINE
    ]
