"""`skyform ssh` and `skyform known-hosts forget`: a shell (or one command) on a cluster's
node, and skyform's record of the nodes' SSH host keys."""

from __future__ import annotations

from skyform.exec.hostkeys import KnownHosts, parse_target
from skyform.exec.login import check_reachable, login, pick_node, run_login


def ssh(cluster: str, node: int | None, command: list[str], *, tty: bool) -> int:
    """Log in to node `node` (default: the head) attached to this terminal, or run `command`
    there; its exit code. The node's host key is checked first (recorded on first contact)."""
    from skyform.state.db import open_state

    with open_state() as db:
        target = pick_node(db.require_cluster(cluster), node)
    check_reachable(target)
    return run_login(login(target, command, tty=tty))


def forget_host_key(target: str) -> tuple[str, int, int]:
    """Forget the key recorded for HOST:PORT (or HOST, port 22): (host, port, keys removed)."""
    host, port = parse_target(target)
    return host, port, KnownHosts().forget(host, port)
