"""`status --ip` and `status --endpoints` / `--endpoint PORT`: where one cluster is reached, as
`sky status --ip CLUSTER` and `sky status --endpoints CLUSTER` print it (a line to script
with: `ssh user@$(skyform status --ip dev)`, `curl $(skyform status --endpoint 8080 dev)`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyform.errors import SkyformError

if TYPE_CHECKING:
    from skyform.state.models import ClusterRecord


def _one_up_cluster(names: list[str], what: str, flag: str) -> ClusterRecord:
    """The handle of the one cluster `names` picks (no name: the only cluster there is)."""
    from skyform.state.db import open_state
    from skyform.state.models import ClusterStatus
    from skyform.state.store import state_exists

    records: list[ClusterRecord] = []
    if state_exists() or names:  # a fresh machine: no state made just to say so
        with open_state() as db:
            records = [db.require_cluster(n) for n in names] if names else db.list_clusters()
    if len(records) != 1:
        found = f"{len(records)} clusters" if records else "No cluster"
        raise SkyformError(
            f"{found} {'given' if names else 'found'}: {what} is shown for a single cluster",
            f"Usage: skyform status {flag} CLUSTER",
        )
    record = records[0]
    if record.status is not ClusterStatus.UP or record.handle is None:
        raise SkyformError(
            f"cluster {record.shown_name!r} is {record.status.value}, not UP: it has no {what}",
            f"Bring it up first (skyform start {record.shown_name}, or apply its plan).",
        )
    return record


def head_ip(names: list[str]) -> str:
    """The address of the cluster's head node (what `ssh` connects to)."""
    handle = _one_up_cluster(names, "IP address", "--ip").handle
    assert handle is not None
    return handle.head_ip


def _ports(specs: list[str]) -> list[int]:
    ports: set[int] = set()
    for spec in specs:
        low, _, high = str(spec).partition("-")
        ports.update(range(int(low), int(high or low) + 1))
    return sorted(ports)


def endpoints(names: list[str], port: int | None = None) -> dict[int, str]:
    """port -> host:port for the ports the cluster opens (`resources.ports`), or just `port`."""
    flag = "--endpoints" if port is None else f"--endpoint {port}"
    record = _one_up_cluster(names, "endpoints", flag)
    handle = record.handle
    assert handle is not None
    opened = _ports(list(record.spec.ports))
    if port is not None:
        if port not in opened:
            raise SkyformError(
                f"cluster {record.shown_name!r} does not open port {port} "
                f"(it opens: {', '.join(map(str, opened)) or 'none'})",
                "Open it with `resources: {ports: ...}` in the task (or --ports) and apply.",
            )
        opened = [port]
    if not opened:
        raise SkyformError(
            f"cluster {record.shown_name!r} opens no ports: it has no endpoints",
            "Open them with `resources: {ports: 8080}` in the task (or --ports) and apply.",
        )
    return {p: handle.endpoint(p) for p in opened}
