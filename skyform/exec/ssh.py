"""SSHRunner: one reused Fabric Connection per node, every timeout explicit.

paramiko failures become NodeUnreachable with what happened and what to do; each carries a
`reason` attribute (refused, timeout, no_route, dns, banner, auth, host_key, handshake, lost)
so callers can tell a preempted node (refused/lost) from a misconfiguration (auth/host_key).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import logging
import select
import socket
import threading
import time
import uuid
from pathlib import Path, PurePosixPath

import paramiko
from fabric import Config, Connection

from skyform.errors import ExecError, NodeUnreachable
from skyform.exec.hostkeys import HostKey, KnownHosts, changed_key_error, display, host_pattern
from skyform.exec.runner import (
    CommandResult,
    NodeRunner,
    Timeouts,
    command_timeout,
    export_prefix,
    lost_node,
    to_bytes,
)
from skyform.state.models import NodeHandle

# paramiko logs handshake failures with tracebacks; ours are reported as errors instead.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False

READ_CHUNK = 1 << 16


_KEYS: dict[tuple[str, int, int], paramiko.PKey | None] = {}
_KEYS_LOCK = threading.Lock()


def _private_key(path: str) -> paramiko.PKey | None:
    """The identity file's key, parsed once per process (every node of a cluster shares
    it); None when paramiko cannot load it on its own (a passphrase, a certificate next to
    it): then the client loads the file itself and reports what is wrong, as before."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    ident = (path, stat.st_mtime_ns, stat.st_size)
    with _KEYS_LOCK:
        if ident not in _KEYS:
            key = None
            if not Path(path + "-cert.pub").exists():
                with contextlib.suppress(Exception):
                    key = paramiko.PKey.from_path(path)
            _KEYS[ident] = key
        return _KEYS[ident]


def _send_eof(chan: paramiko.Channel) -> None:
    """Tell the node our input ended, holding the channel's lock until the EOF is on the wire.

    paramiko's shutdown_write builds the EOF under that lock but sends it after releasing
    it; a command that ends at once gets its CLOSE answered by paramiko's transport thread in
    between, so our EOF followed our CLOSE and OpenSSH dropped the whole connection ("ieof
    packet referred to nonexistent channel"), taking every other command on it along. Sending
    under the lock is what paramiko itself does for data (Channel._send)."""
    with chan.lock:
        if chan.closed or chan.eof_sent:
            return
        message = chan._send_eof()  # type: ignore[attr-defined]  # paramiko internals, see above
        if message is not None and chan.transport is not None:
            chan.transport._send_user_message(message)  # type: ignore[attr-defined]


def unreachable(message: str, hint: str | None, reason: str) -> NodeUnreachable:
    return NodeUnreachable(message, hint=hint, reason=reason)


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """First contact: record the key in skyform's known_hosts (a changed key never gets here:
    paramiko compares against the keys we preload and raises BadHostKeyException)."""

    def __init__(self, known_hosts: KnownHosts, host: str, port: int) -> None:
        self.known_hosts, self.host, self.port = known_hosts, host, port

    def missing_host_key(self, client, hostname, key) -> None:
        self.known_hosts.check(self.host, self.port, HostKey.of(key))


class SSHRunner(NodeRunner):
    def __init__(
        self,
        node: NodeHandle,
        known_hosts: KnownHosts,
        timeouts: Timeouts,
        *,
        identity: paramiko.PKey | None = None,
    ) -> None:
        super().__init__(node, timeouts)
        self.known_hosts = known_hosts
        # the key already in memory (the connection keeper got it over a pipe), else the file
        self.identity = identity
        self.user = node.user or "root"
        self.where = display(node.host, node.port)
        self.conn: Connection | None = None
        self._sftp: paramiko.SFTPClient | None = None
        # fan-outs may use one runner from several threads (a watcher and a cancel): channels
        # share the transport safely, (re)connecting and opening SFTP must not race
        self._lock = threading.RLock()

    # --- connecting --------------------------------------------------------------------

    def connect(self) -> None:
        key_file = self._identity_file()
        sock = self._tcp_connect()
        loaded = self.identity or (_private_key(key_file) if key_file else None)
        conn = Connection(
            self.node.host,
            user=self.user,
            port=self.node.port,
            # one Config per connection: Fabric's Connection writes into the one it is given,
            # so a shared one races between a fan-out's threads. Lazy loads no config file;
            # the empty SSH config keeps ~/.ssh/config from changing where a node's SSH goes
            config=Config(lazy=True, ssh_config=paramiko.SSHConfig()),
            connect_kwargs={
                "sock": sock,
                "pkey": loaded,
                "key_filename": [key_file] if key_file and loaded is None else [],
                "look_for_keys": False,
                "allow_agent": False,
                "banner_timeout": self.timeouts.banner,
                "auth_timeout": self.timeouts.auth,
                "channel_timeout": self.timeouts.channel,
            },
        )
        keys = conn.client.get_host_keys()  # no system known_hosts: only skyform's
        for known in self.known_hosts.lookup(self.node.host, self.node.port):
            try:
                pkey = paramiko.PKey.from_type_string(known.family, base64.b64decode(known.base64))
            except Exception:  # a key type paramiko cannot load: let the policy decide
                continue
            keys.add(host_pattern(self.node.host, self.node.port), known.family, pkey)
        conn.client.set_missing_host_key_policy(
            _AcceptNew(self.known_hosts, self.node.host, self.node.port)
        )
        try:
            conn.open()
        except NodeUnreachable:
            conn.close()
            sock.close()
            raise
        except Exception as exc:
            conn.close()
            sock.close()
            raise self._connect_error(exc, key_file) from None
        conn.transport.set_keepalive(self.timeouts.keepalive)
        self.conn = conn

    def _identity_file(self) -> str | None:
        if not self.node.identity_file:
            return None
        path = Path(self.node.identity_file).expanduser()
        if not path.is_file():
            raise unreachable(
                f"{self.label}: identity file {path} does not exist",
                "fix identity_file for this node (config.yaml ssh_pools, or the engine's key)",
                "auth",
            )
        return str(path)

    def _tcp_connect(self) -> socket.socket:
        where, timeout = self.where, self.timeouts.connect
        try:
            sock = socket.create_connection((self.node.host, self.node.port), timeout=timeout)
        except socket.gaierror as exc:
            raise unreachable(
                f"cannot reach node {self.node.rank}: cannot resolve host {self.node.host!r} "
                f"({exc.strerror})",
                "check the host name in the node pool or the engine's outputs",
                "dns",
            ) from None
        except TimeoutError:
            raise unreachable(
                f"cannot reach node {self.node.rank} at {where}: no answer within {timeout:g}s",
                "check that the host is up and that no firewall drops SSH on that port",
                "timeout",
            ) from None
        except ConnectionRefusedError:
            raise unreachable(
                f"cannot reach node {self.node.rank} at {where}: connection refused",
                "nothing listens on that port: the node is down, still booting, or sshd is "
                "stopped (a preempted spot node looks like this)",
                "refused",
            ) from None
        except OSError as exc:
            what = (
                "no route to host"
                if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH)
                else (exc.strerror or str(exc))
            )
            raise unreachable(
                f"cannot reach node {self.node.rank} at {where}: {what}",
                "check the address, the network path and the host's firewall",
                "no_route",
            ) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _connect_error(self, exc: Exception, key_file: str | None) -> NodeUnreachable:
        rank, where = self.node.rank, self.where
        if isinstance(exc, paramiko.BadHostKeyException):
            error = changed_key_error(self.node.host, self.node.port, self.known_hosts.path)
            error.reason = "host_key"
            return error
        if isinstance(exc, paramiko.AuthenticationException):
            key = key_file or "(no identity file)"
            return unreachable(
                f"node {rank} ({where}) rejected the key {key} for user {self.user}",
                f"check that the key's .pub is in ~{self.user}/.ssh/authorized_keys on the node "
                "and that the user name is right",
                "auth",
            )
        text = str(exc)
        if "protocol banner" in text or isinstance(exc, (socket.timeout, TimeoutError)):
            return unreachable(
                f"node {rank} ({where}) accepted the connection but sent no SSH banner within "
                f"{self.timeouts.banner:g}s: the node looks frozen or overloaded",
                "wait a minute and retry; if it persists, reboot or replace the node",
                "banner",
            )
        return unreachable(
            f"SSH handshake with node {rank} ({where}) failed: {text or type(exc).__name__}",
            "check that an SSH server (not another service) listens on that port",
            "handshake",
        )

    def _transport(self) -> paramiko.Transport:
        """The live transport; reconnects once if the previous connection dropped."""
        with self._lock:
            if self.conn is None or not self.conn.is_connected:
                self.close()
                self.connect()
            assert self.conn is not None
            return self.conn.transport

    def ensure_connected(self) -> None:
        """Connect again if the connection dropped (the keeper checks a node this way)."""
        self._transport()

    def _lost(self, what: str) -> NodeUnreachable:
        self.close()
        return lost_node(self.node.rank, self.where, what)

    # --- commands ----------------------------------------------------------------------

    def run(self, cmd, *, env=None, timeout=None, stdin=None) -> CommandResult:
        transport = self._transport()
        budget = timeout or self.timeouts.command
        deadline = time.monotonic() + budget
        try:
            chan = transport.open_session(timeout=self.timeouts.channel)
        except (paramiko.SSHException, EOFError, OSError):
            raise self._lost("while opening a session") from None
        out, err = bytearray(), bytearray()
        with chan:
            try:
                chan.exec_command(export_prefix(env) + cmd)
                data = to_bytes(stdin)
                if data:
                    chan.settimeout(max(0.1, deadline - time.monotonic()))
                    chan.sendall(data)
                _send_eof(chan)
                while True:
                    # read the end first: what the node sent before its EOF is buffered by
                    # then, so the drain below gets all of it (checked after the drain, output
                    # arriving with the EOF in between was dropped: an empty answer)
                    ended = chan.eof_received or chan.closed
                    while chan.recv_ready():
                        out += chan.recv(READ_CHUNK)
                    while chan.recv_stderr_ready():
                        err += chan.recv_stderr(READ_CHUNK)
                    if ended:
                        break
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    select.select([chan], [], [], min(left, 1.0))
                if not chan.status_event.wait(max(0.1, deadline - time.monotonic())):
                    raise TimeoutError
            except TimeoutError:
                raise command_timeout(self.node.rank, self.where, budget) from None
            except (paramiko.SSHException, EOFError, OSError):
                raise self._lost("during a command") from None
            code = chan.recv_exit_status() if chan.exit_status_ready() else -1
        if code == -1 and not transport.is_active():
            raise self._lost("during a command")
        return CommandResult(
            code, out.decode(errors="replace"), err.decode(errors="replace"), bytes(out)
        )

    # --- files -------------------------------------------------------------------------

    def sftp(self) -> paramiko.SFTPClient:
        with self._lock:
            if self._sftp is None:
                transport = self._transport()
                try:
                    sftp = paramiko.SFTPClient.from_transport(transport)
                except (paramiko.SSHException, EOFError, OSError):
                    raise self._lost("while opening SFTP") from None
                if sftp is None:  # paramiko returns None when the channel could not open
                    raise self._lost("while opening SFTP")
                channel = sftp.get_channel()
                if channel is not None:
                    channel.settimeout(self.timeouts.command)
                self._sftp = sftp
            return self._sftp

    @staticmethod
    def sftp_path(remote_path: str) -> str:
        """SFTP resolves relative paths against the login directory (the home)."""
        if remote_path in ("~", ""):
            return "."
        return remote_path[2:] if remote_path.startswith("~/") else remote_path

    def makedirs(self, remote_dir: str, mode: int = 0o755) -> None:
        sftp = self.sftp()
        path = PurePosixPath(self.sftp_path(remote_dir))
        missing = []
        while str(path) not in (".", "/", ""):
            try:
                sftp.stat(str(path))
                break
            except FileNotFoundError:
                missing.append(path)
                path = path.parent
        for part in reversed(missing):
            sftp.mkdir(str(part), mode)

    def put_bytes(self, data: bytes, remote_path: str, mode: int = 0o644) -> None:
        target = PurePosixPath(self.sftp_path(remote_path))
        tmp = str(target.with_name(f".{target.name}.tmp.{uuid.uuid4().hex[:12]}"))
        sftp = self.sftp()
        try:
            self.makedirs(str(target.parent))
            with sftp.open(tmp, "wb") as remote:
                remote.chmod(mode)  # before the content lands: secrets never sit world-readable
                remote.set_pipelined(True)
                remote.write(data)
            sftp.posix_rename(tmp, str(target))
        except OSError as exc:
            with contextlib.suppress(OSError):
                sftp.remove(tmp)
            if not self.conn or not self.conn.is_connected:
                raise self._lost(f"while writing {remote_path}") from None
            raise ExecError(
                f"{self.label}: cannot write {remote_path}: {exc.strerror or exc}",
                hint="check free disk space and permissions on the node",
            ) from None

    def close(self) -> None:
        with self._lock:
            if self._sftp is not None:
                with contextlib.suppress(Exception):
                    self._sftp.close()
                self._sftp = None
            if self.conn is not None:
                self.conn.close()
                self.conn = None
