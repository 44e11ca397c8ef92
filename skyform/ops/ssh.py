"""`skyform ssh` and `skyform known-hosts forget`: a shell (or one command) on a cluster's
node, and skyform's record of the nodes' SSH host keys."""

from __future__ import annotations

from skyform.exec.hostkeys import KnownHosts, parse_target
from skyform.exec.login import check_reachable, login, pick_node, run_login


def ssh(cluster: str, node: int | None, command: list[str], *, tty: bool) -> int:
    """Log in to node `node` (default: the head) attached to this terminal, or run `command`
    there (in the cluster's container when its jobs run in one); its exit code. The node's
    host key is checked first (recorded on first contact)."""
    from skyform.plan.containers import container_image
    from skyform.state.db import open_state

    with open_state() as db:
        record = db.require_cluster(cluster)
    target = pick_node(record, node)
    boxed = container_image(record.spec.image_id, record.spec.offer.cloud) is not None
    check_reachable(target)
    return run_login(login(target, command, tty=tty, container_of=record.name if boxed else None))


def forget_host_key(target: str) -> tuple[str, int, int]:
    """Forget the key recorded for HOST:PORT (or HOST, port 22): (host, port, keys removed)."""
    host, port = parse_target(target)
    return host, port, KnownHosts().forget(host, port)
