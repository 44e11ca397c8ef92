"""Autostop from the laptop's side: change or cancel a cluster's setting (`skyform autostop`;
the head node is armed by lifecycle/autostop.py), and make state converge on what the agent did.

The node decides (skyform/exec/agent.py): after `stop_after` idle minutes it ends the
cluster's processes (on aws/gcp it also shuts the machine down, which stops the instance)
and leaves a `stop` marker; after `down_after` a `down` marker. State converges on the next
`skyform status` (local clusters: every time, reading the node directory costs nothing) or
`skyform status --refresh` (every cluster with autostop, over SSH): a `down` marker is
finished as `skyform down` would (the stack destroyed, the hosts released, the usage closed
at the time the agent acted, so cost-report bills it until then and not until `status`),
a `stop` marker records the cluster STOPPED (ops/stopstart.py). A STOPPED cluster with a
`down_after` is torn down by the same refresh once that much time has passed since its last
activity. A managed job's clusters are never armed: their controller decides.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from skyform.config import Config
from skyform.errors import LockedError, NodeUnreachable, SkyformError
from skyform.exec import agent
from skyform.exec.connect import open_runner
from skyform.lifecycle import clusters
from skyform.lifecycle.autostop import QUICK, push_setting
from skyform.plan.autostop import why_not_stoppable
from skyform.plan.model import AutostopSetting
from skyform.state.db import StateDB
from skyform.state.models import ClusterRecord, ClusterStatus

Emit = Callable[[str], None]
DEFAULT_IDLE_MINUTES = 5  # `skyform autostop C` without -i, as `sky autostop`


def new_setting(
    record: ClusterRecord,
    *,
    idle_minutes: int | None,
    down: bool,
    wait_for: str | None,
    cancel: bool,
) -> AutostopSetting | None:
    """`skyform autostop C [-i N] [--down] [--wait-for W] [--cancel]`, SkyPilot's rules:
    -i defaults to 5, --cancel excludes -i, a stop is refused where only down exists."""
    if cancel:
        if idle_minutes is not None or down:
            raise SkyformError("--cancel cannot be combined with -i or --down")
        return None
    minutes = max(1, DEFAULT_IDLE_MINUTES if idle_minutes is None else idle_minutes)
    current = record.spec.autostop
    base = current or AutostopSetting()
    if down:
        setting = base.model_copy(update={"stop_after": None, "down_after": minutes})
    else:
        why = why_not_stoppable(record.spec.offer)
        if why is not None:
            raise SkyformError(
                f"cluster {record.shown_name!r} cannot be stopped: {why}",
                f"Tear it down when idle instead: skyform autostop {record.shown_name} "
                f"-i {minutes} --down",
            )
        down_after = base.down_after if base.down_after and base.down_after > minutes else None
        setting = base.model_copy(update={"stop_after": minutes, "down_after": down_after})
    if wait_for is not None:
        setting = setting.model_copy(update={"wait_for": wait_for})
    return setting


def set_autostop(
    db: StateDB, config: Config, name: str, setting: AutostopSetting | None
) -> ClusterRecord:
    from skyform.ops.managed.cancel import refuse_managed_clusters
    from skyform.state.lock import cluster_lock

    with cluster_lock(name, purpose=f"skyform autostop {name}"):
        refuse_managed_clusters(db, [name])
        record = db.require_cluster(name)
        if record.status is not ClusterStatus.UP:
            raise SkyformError(
                f"cluster {name!r} is {record.status.value}: autostop needs it UP",
                f"Start it first: skyform start {name}"
                if record.status is ClusterStatus.STOPPED
                else None,
            )
        return push_setting(db, config, record, setting)


# --- convergence (status) -----------------------------------------------------------------


def _report(record: ClusterRecord) -> agent.AgentReport | None:
    assert record.handle is not None
    try:
        runner = open_runner(record.handle.head, timeouts=QUICK)
    except NodeUnreachable:
        return None  # a cloud node that shut itself down: its engine's refresh tells
    try:
        return agent.report(runner)
    except SkyformError:
        return None
    finally:
        runner.close()


SHUT_DOWN = {"stopping", "stopped", "STOPPING", "TERMINATED", "SUSPENDED"}


def _shut_down(db: StateDB, config: Config, record: ClusterRecord) -> bool:
    """Infra whose stop stops instances (aws, gcp): are the instances of a head that does not
    answer shut down (not gone)?"""
    from skyform.infra import Stop, infra
    from skyform.stacks.registry import engine_for

    row = infra(record.spec.offer.cloud)
    if row is None or row.stop is not Stop.INSTANCES or record.handle is None:
        return False
    try:
        state = engine_for(record.spec.offer.cloud, config=config, state=db).refresh(record.handle)
    except SkyformError:
        return False
    return bool(state.nodes) and all(n.detail in SHUT_DOWN for n in state.nodes)


def _idle_since(db: StateDB, record: ClusterRecord) -> float:
    """The cluster's last activity skyform saw, for a head that shut itself down and cannot
    say when: it came up (its usage interval opened), its agent was armed (every job start
    and `skyform autostop` do it: the countdown starts again), a job ran or ended (unless
    jobs do not count, wait_for none). The agent stopped it its timer later at the
    earliest, so billing it until then never counts what did not run; neither does it
    count until whoever next ran `status --refresh`."""
    name = record.name
    opened = [u.started_at for u in db.usage(since=time.time()) if u.cluster == name]
    since = max(opened or [record.launched_at or 0.0])
    seen = [since]
    seen += [e.ts for e in db.events(cluster=name, since=since) if e.kind == "cluster.autostop"]
    job = db.latest_job(name)
    setting = record.spec.autostop
    if job is not None and setting is not None and setting.wait_for != "none":
        seen.append(job.ended_at or job.started_at or job.submitted_at)
    return max(seen)


def _expired_while_stopped(record: ClusterRecord, now: float) -> bool:
    """down_after counts from the last activity (an autostop: stop_after before the stop;
    a stop by hand: the stop itself)."""
    setting = record.spec.autostop
    since = record.last_active_at or record.stopped_at
    if setting is None or setting.down_after is None or since is None:
        return False
    return now - since >= setting.down_after * 60


def converge(
    db: StateDB, config: Config, record: ClusterRecord, *, emit: Emit, now: float | None = None
) -> tuple[ClusterRecord | None, str | None]:
    """Finish what the node agent did to `record`: (the record now or None if torn down,
    what happened in words or None). A cluster another command holds is left for later."""
    from skyform.state.lock import cluster_lock

    now = time.time() if now is None else now
    last_active: float | None = None
    acted_at: float | None = None  # when the node stopped, on this machine's clock
    if record.spec.autostop is None or record.handle is None:
        return record, None
    if record.status is ClusterStatus.STOPPED:
        if not _expired_while_stopped(record, now):
            return record, None
        kind, why = "down", f"stopped for longer than down_after ({record.spec.autostop.short})"
    elif record.status is ClusterStatus.UP:
        if _managed(db, record.name):
            return record, None
        found = _report(record)
        setting = record.spec.autostop
        if found is not None and found.state == "autostopping":
            return record, "AUTOSTOPPING (the node agent runs its hook, then acts)"
        if found is not None and found.acted is not None:
            kind = found.acted
            last_active = found.last_active  # the node's clock, as the agent counted
            acted_at = _acted_here(found, now)
        elif found is None and _shut_down(db, config, record):
            # the agent's `shutdown -h` stopped the instances: a stop, unless down is all
            # it had (with both timers, the stopped cluster's down_after is counted below)
            kind = "stop" if setting.stop_after is not None else "down"
            last_active = _idle_since(db, record)
            minutes = setting.stop_after if kind == "stop" else setting.down_after
            acted_at = min(now, last_active + (minutes or 0) * 60)
        else:
            return record, None
        why = f"idle for {setting.down_after if kind == 'down' else setting.stop_after} min"
    else:
        return record, None
    try:
        with cluster_lock(record.name, wait=0, purpose=f"autostop {kind} {record.name}"):
            current = db.get_cluster(record.name)
            if current is None or current.status != record.status:
                return current, None
            if kind == "down":
                clusters.destroy(
                    db, config, current, reason=f"autostop: {why}", emit=emit, ended_at=acted_at
                )
                return None, f"torn down by autostop ({why})"
            stopped = clusters.record_stopped(
                db,
                config,
                current,
                emit=emit,
                reason=f"autostop: {why}",
                last_active=last_active,
                stopped_at=acted_at,
            )
            return stopped, f"stopped by autostop ({why})"
    except LockedError:
        return record, None


def _acted_here(found: agent.AgentReport, now: float) -> float | None:
    """When the agent stopped the node, on this machine's clock (the node's may differ:
    its report says what its clock read then and now): the cluster billed until then, not
    until this `status` noticed."""
    if found.state_at is None:
        return None
    return now - max(0.0, found.node_now - found.state_at)


def _managed(db: StateDB, name: str) -> bool:
    from skyform.state.managed import ManagedJobs

    return ManagedJobs(db).owner_of(name) is not None


def converge_all(
    db: StateDB, config: Config, records: list[ClusterRecord], *, remote: bool, emit: Emit
) -> tuple[list[ClusterRecord], list[str]]:
    """`status`: converge every cluster with autostop (only local ones unless `remote`);
    the records as they are now, and one note per cluster that changed."""
    kept, notes = [], []
    for record in records:
        local = record.spec.offer.cloud == "local"
        if record.spec.autostop is not None and (remote or local):
            after, note = converge(db, config, record, emit=emit)
            if note:
                notes.append(f"{record.shown_name}: {note}")
            if after is None:
                continue
            record = after
        kept.append(record)
    return kept, notes


# --- the verb -------------------------------------------------------------------------------


def autostop_clusters(
    names: list[str],
    *,
    idle_minutes: int | None,
    down: bool,
    wait_for: str | None,
    cancel: bool,
) -> Iterator[tuple[str, AutostopSetting | None]]:
    """`skyform autostop NAMES ...`: set (or cancel) each cluster's autostop in turn; yields
    each cluster with its new setting (None: cancelled) once it is in place."""
    from skyform.config import load_config
    from skyform.spec.errors import BadValue
    from skyform.spec.values import wait_for as parse_wait_for
    from skyform.state.db import open_state

    if wait_for is not None:
        try:
            wait_for = parse_wait_for(wait_for)
        except BadValue as exc:
            raise SkyformError(f"--wait-for {wait_for!r}: {exc}", exc.hint) from None
    config = load_config()
    with open_state() as db:
        for name in dict.fromkeys(names):
            record = db.require_cluster(name)
            setting = new_setting(
                record, idle_minutes=idle_minutes, down=down, wait_for=wait_for, cancel=cancel
            )
            set_autostop(db, config, name, setting)
            yield name, setting
