"""`skyform check` for one ssh pool host: log in as apply will, and measure what is not declared.

A TCP banner only says sshd listens; a login also proves the user, the key, the host key
(skyform's known_hosts, first contact recorded as OpenSSH's accept-new does) and that a key
exchange is agreed. A host whose `cpus`, `memory` or `accelerators` config.yaml leaves out is
probed in the same session (`nproc`, /proc/meminfo, `uname -m`, `nvidia-smi` when present);
every host's container runtime is (`docker`/`podman info`): nobody declares it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from skyform.config import SSHHost, SSHPool
from skyform.errors import SkyformError
from skyform.plan.catalog.hostfacts import PROBE_COMMAND, RUNTIME_PROBE, HostFacts, parse_probe
from skyform.plan.catalog.onprem import host_id

TIMEOUTS = {"connect": 3.0, "banner": 5.0, "auth": 8.0, "channel": 10.0, "command": 20.0}


@dataclass(frozen=True)
class LoginResult:
    host_id: str
    ok: bool
    line: str  # what `check` prints for the host
    hint: str | None = None
    facts: HostFacts | None = None  # measured now (only for hosts that leave a gap)


def needs_probe(host: SSHHost) -> bool:
    return host.cpus is None or host.memory is None or not host.accelerators


class _KexLog(logging.Handler):
    """paramiko says which key exchange it agreed only in a debug line ("Kex: NAME"), logged
    from the transport's own thread: keep the last one per thread name."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.agreed: dict[str, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Kex: "):
            self.agreed[record.threadName or ""] = message[5:].strip()


_KEX = _KexLog()


@contextmanager
def recording_kex() -> Iterator[None]:
    """Listen for paramiko's agreed key exchanges while `check` logs in (only then: debug
    records cost time on every connection)."""
    logger = logging.getLogger("paramiko.transport")
    level = logger.level
    logger.addHandler(_KEX)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(_KEX)
        logger.setLevel(level)


def _kex(transport) -> str:
    return _KEX.agreed.get(getattr(transport, "name", ""), "unknown")


def login_host(pool_name: str, pool: SSHPool, host: SSHHost) -> LoginResult:
    from skyform.exec.hostkeys import KnownHosts
    from skyform.exec.runner import Timeouts
    from skyform.exec.ssh import SSHRunner  # paramiko: only when a pool is checked
    from skyform.stacks.sshnodes import pool_node

    ident = host_id(pool_name, pool, host)
    node = pool_node(0, ident, host, pool)
    where = f"{node.user}@{node.host}:{node.port}"
    runner = SSHRunner(node, KnownHosts(), Timeouts(**TIMEOUTS))  # type: ignore[arg-type]
    try:
        runner.connect()
    except SkyformError as err:
        return LoginResult(ident, False, f"✘ {where}: {err.message}", err.hint)
    try:
        assert runner.conn is not None
        transport = runner.conn.transport
        key = transport.get_remote_server_key().get_name()
        line = f"✔ {where}: logged in (host key {key}, kex {_kex(transport)})"
        probed_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        sized = needs_probe(host)
        result = runner.run(PROBE_COMMAND if sized else RUNTIME_PROBE, timeout=TIMEOUTS["command"])
        if not result.ok:
            return LoginResult(
                ident,
                True,
                f"{line}; probe failed (exit {result.exit_code})",
                "declare cpus: and memory: (GiB) for this host in config.yaml" if sized else None,
            )
        facts = parse_probe(result.stdout, probed_at)
        if sized:
            line += f"; probed: {facts.describe()}"
        else:  # declared: only the runtime was measured (the rest stays unknown, unused)
            line += f"; container runtime: {facts.container_runtime or 'none'}"
        return LoginResult(ident, True, line, facts=facts)
    except SkyformError as err:
        return LoginResult(ident, False, f"✘ {where}: {err.message}", err.hint)
    finally:
        runner.close()
