"""A cluster's bucket mounts over its life, on its nodes: attached again where a plan says so
(a COPY refresh, a mount found missing) and after `start`, parked when it stops, and probed
when a plan is made.

A MOUNT or MOUNT_CACHED lives as an rclone process on each node. A stop ends it (a stopped
VM, or `stop` on an ssh pool, which parks the mounts: MOUNT_CACHED uploads flushed, then
unmounted); `start` mounts them again before anything runs, and the next job or `exec`
attaches any that a node lost (a reboot, rclone died). What would otherwise be written under
a mount point with no mount lands in a plain directory and never reaches the bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor

from skyform.config import Config
from skyform.errors import ExecError, NodeUnreachable
from skyform.exec.runner import Timeouts
from skyform.plan.model import JobSpec
from skyform.plan.mountdiff import fused_mounts
from skyform.state.models import ClusterRecord, NodeHandle

NodeEvent = Callable[[str, "int | None", str], None]
Emit = Callable[[str], None]


def attach_again(
    config: Config,
    record: ClusterRecord,
    job: JobSpec,
    mounts: Collection[str],
    *,
    on_event: NodeEvent | None = None,
) -> list[str]:
    """Attach the job's bucket mounts named in `mounts` (its file_mounts keys) on every node
    of the cluster again, without running the job: a COPY is copied anew, a MOUNT or
    MOUNT_CACHED is mounted (a live mount is kept). Returns the mounts attached."""
    from skyform.exec.run import open_cluster
    from skyform.storage.attach import attach_buckets

    chosen = {d: m for d, m in job.file_mounts.items() if d in mounts and m.bucket is not None}
    if not chosen or record.handle is None:
        return []
    subset = job.model_copy(update={"file_mounts": chosen})
    with open_cluster(record.handle, on_event=on_event, prepare=False) as session:
        attach_buckets(session, subset, config.storage)
    return sorted(chosen)


def attach_after_start(config: Config, record: ClusterRecord, *, emit: Emit) -> None:
    """The MOUNT and MOUNT_CACHED buckets of the job last applied, mounted again on every node
    of a cluster that was just started; raises (naming the cluster, which is up) when a node
    could not mount them."""
    fused = fused_mounts(record.job)
    if record.job is None or not fused:
        return
    try:
        attached = attach_again(
            config,
            record,
            record.job,
            fused,
            on_event=lambda _stage, rank, message: emit(f"node {rank}: {message}"),
        )
    except ExecError as err:
        raise ExecError(
            f"cluster {record.name!r} is up again, but its bucket mounts are not: {err.message}",
            f"{err.hint or ''} Until they are, what is written under "
            f"{', '.join(sorted(fused))} does not reach the bucket; `skyform plan` shows them "
            "(not attached) and `skyform apply` attaches them.".strip(),
        ) from None
    emit(f"bucket mounts attached again: {', '.join(attached)}")


def park_buckets(record: ClusterRecord, *, emit: Emit) -> None:
    """On every node of a cluster that stops: MOUNT_CACHED uploads flushed, then every bucket
    mount unmounted (its rclone ends). A node that does not answer is said so (a cloud
    instance the autostop agent already shut down parked its own mounts first)."""
    from skyform.exec.connect import open_runner
    from skyform.storage.nodes import FLUSH_TIMEOUT, PARK_BUCKETS, parked_words

    if record.handle is None or not record.handle.nodes:
        return
    timeouts = Timeouts(connect=5.0, banner=5.0, auth=5.0, channel=5.0, command=FLUSH_TIMEOUT + 60)

    def one(node: NodeHandle) -> str | None:
        try:
            runner = open_runner(node, timeouts=timeouts)
            try:
                result = runner.run(PARK_BUCKETS)
            finally:
                runner.close()
        except NodeUnreachable as err:
            return f"node {node.rank}: not reachable, bucket mounts not parked ({err.message})"
        words = parked_words(result.stdout)
        return None if words == "no bucket mounts" else f"node {node.rank}: {words}"

    nodes = record.handle.nodes
    with ThreadPoolExecutor(max_workers=min(32, len(nodes))) as pool:
        for message in pool.map(one, nodes):
            if message is not None:
                emit(message)


def detached_mounts(record: ClusterRecord, mounts: Mapping[str, str]) -> dict[str, str]:
    """Of `mounts` (file mount -> mode), those that a node of the cluster does not have
    attached: no live FUSE mount there. Raises NodeUnreachable when a node cannot be asked."""
    from skyform.exec.mounts import node_path
    from skyform.exec.results import raise_first
    from skyform.exec.run import open_cluster
    from skyform.storage.nodes import attached_probe

    if record.handle is None or not mounts:
        return {}
    order = sorted(mounts)
    command = attached_probe([node_path(dst) for dst in order])
    # the default timeouts: the cluster's connection keeper (named by them) is the one its
    # jobs use, so asking costs a Unix-socket round trip per node
    with open_cluster(record.handle, prepare=False) as session:
        outcomes = session.fan_out(lambda _rank, runner: runner.run(command).stdout)
    raise_first(outcomes, "checking bucket mounts")
    missing: set[int] = set()
    for outcome in outcomes.values():
        missing |= {int(w) for w in (outcome.value or "").split() if w.isdigit()}
    return {order[i]: mounts[order[i]] for i in sorted(missing) if i < len(order)}
