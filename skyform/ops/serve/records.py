"""What `serve plans` and `serve logs` read: a service's plan revisions, its controller's and
load balancer's logs, and which cluster runs a replica."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from skyform.errors import SkyformError
from skyform.ops.logfiles import appended
from skyform.serve import revisions, state


def require(name: str) -> state.ServiceRecord:
    """The service's record; an error naming the services there are when it does not exist."""
    return state.require(name)


def plans(name: str) -> list[revisions.ServiceRevision]:
    state.require(name)
    return revisions.load_all(name)


def replica_of(name: str, replica_id: int) -> state.ReplicaRecord:
    """Replica `replica_id` of service `name`, as `serve status` lists it."""
    record = state.require(name)
    replica = next((r for r in record.replicas if r.replica_id == replica_id), None)
    if replica is None or not replica.cluster:
        known = ", ".join(str(r.replica_id) for r in record.replicas) or "none"
        raise SkyformError(f"service {name!r} has no replica {replica_id}", f"Replicas: {known}.")
    return replica


def kept_log(name: str, replica: state.ReplicaRecord, *, tail: int | None) -> bytes | None:
    """The log a failed replica's controller kept before tearing its cluster down (its last
    `tail` lines), or None when it kept none."""
    from skyform.serve.replica_logs import kept_log_path

    if not replica.log_kept:
        return None
    try:
        with open(kept_log_path(state.service_dir(name), replica.replica_id), "rb") as fh:
            lines = fh.readlines()
    except FileNotFoundError:
        return None
    return b"".join(lines if tail is None else list(deque(lines, maxlen=tail)))


def cluster_exists(cluster: str) -> bool:
    from skyform.state.db import open_state

    with open_state() as db:
        return db.get_cluster(cluster) is not None


def log_chunks(name: str, which: str, *, follow: bool, tail: int | None) -> Iterator[bytes]:
    """The service's controller or load-balancer log (its last `tail` lines), then, with
    `follow`, what is appended while the service exists. `which`: "controller" or
    "load_balancer"."""
    state.require(name)
    file = "controller.log" if which == "controller" else "lb.log"
    row = state.row_of(name)
    if row is not None and not state.runs_here(row):
        where = f"{row.home}/serve/{name}/{file}"
        raise SkyformError(
            f"service {name!r}'s {which.replace('_', ' ')} log is on {row.host}, at {where} "
            f"(its controller runs from that SKYFORM_HOME, made by {row.owner})",
            f"Run skyform serve logs there, or read the file on {row.host}.",
        )
    path = state.service_dir(name) / file
    if not path.exists():
        return
    with open(path, "rb") as fh:
        lines = fh.readlines()
        yield b"".join(lines if tail is None else list(deque(lines, maxlen=tail)))
        if follow:
            yield from appended(fh, over=lambda: state.read_record(name) is None)
