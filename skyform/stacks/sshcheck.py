"""The ssh engine's health: `skyform check` logs in to every pool host (stacks/ssh_login.py).

A pool's hosts are the user's own machines: skyform never finds them gone behind its back
(a host that stops answering is a node that failed, which recovery detects by probing).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from skyform.config import Config, SSHPool
from skyform.infra import InfraKind
from skyform.stacks.health import InfraStatus
from skyform.state.models import ClusterHandle


def nodes_gone(handle: ClusterHandle) -> bool:
    return False


def check(
    row: InfraKind, config: Config, env: Mapping[str, str], user_home: Path
) -> list[InfraStatus]:
    return [check_ssh_pool(name, pool) for name, pool in sorted(config.ssh_pools.items())]


def tool_check() -> InfraStatus | None:
    return None


def check_ssh_pool(name: str, pool: SSHPool) -> InfraStatus:
    """Log in to every host (user, key, host key, key exchange: what `apply` will need) and
    probe the ones whose size config.yaml leaves out; cache what was measured."""
    from skyform.plan.catalog.hostfacts import write_facts
    from skyform.stacks.ssh_login import login_host, recording_kex

    with recording_kex(), ThreadPoolExecutor(max_workers=min(16, len(pool.hosts))) as ex:
        results = list(ex.map(lambda host: login_host(name, pool, host), pool.hosts))
    probed = {r.host_id: r.facts for r in results if r.facts is not None}
    if probed:
        write_facts(probed)
    ok = sum(r.ok for r in results)
    hints = [r.hint for r in results if r.hint]
    return InfraStatus(
        f"ssh/{name}",
        ok > 0,
        f"{ok}/{len(results)} hosts log in",
        hints[0] if hints else None,
        [r.line for r in results],
    )
