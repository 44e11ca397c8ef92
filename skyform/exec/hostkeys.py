"""skyform's own known_hosts: OpenSSH's `accept-new` policy, in OpenSSH's file format.

The first contact with HOST:PORT records its key; a later different key is refused, never
silently replaced. The file is shared with the `ssh` that rsync spawns
(`-o UserKnownHostsFile=... -o StrictHostKeyChecking=yes`), so it must stay plain OpenSSH:
`host type base64` for port 22, `[host]:port type base64` otherwise. Writes are
read-modify-write under a lock (threads and processes) and land by temp + rename, 0600.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from skyform.config import ensure_dir, home
from skyform.errors import NodeUnreachable, SkyformError
from skyform.paths import write_atomic

_THREAD_LOCK = threading.Lock()


def host_pattern(host: str, port: int) -> str:
    """How OpenSSH names HOST:PORT in known_hosts."""
    return host if port == 22 else f"[{host}]:{port}"


def display(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_target(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[HOST]:PORT` (IPv6) or `HOST` (port 22), as `known-hosts forget` takes it."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":") or "22"
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:
        host, port = text, "22"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SkyformError(f"expected HOST:PORT (e.g. 10.0.0.5:2222), got {text!r}")
    return host, int(port)


@dataclass(frozen=True)
class HostKey:
    key_type: str  # ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa ...
    base64: str

    @classmethod
    def parse(cls, text: str) -> HostKey:
        """From `type base64 [comment]`, as in a host's ssh_host_*_key.pub."""
        parts = text.split()
        if len(parts) < 2:
            raise ValueError(f"expected 'TYPE BASE64', got {text[:40]!r}")
        return cls(parts[0], parts[1])

    @classmethod
    def of(cls, pkey: object) -> HostKey:
        """From a paramiko PKey (anything with get_name() and get_base64())."""
        return cls(pkey.get_name(), pkey.get_base64())  # type: ignore[attr-defined]

    @property
    def family(self) -> str:
        """RSA keys are negotiated as rsa-sha2-* but recorded as ssh-rsa."""
        return "ssh-rsa" if self.key_type.startswith("rsa-sha2") else self.key_type


class KnownHosts:
    """One known_hosts file. Unparseable or hashed lines are kept as they are."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else home() / "known_hosts"

    # --- reading ---------------------------------------------------------------------

    def _lines(self) -> list[str]:
        try:
            return self.path.read_text().splitlines()
        except FileNotFoundError:
            return []

    def lookup(self, host: str, port: int) -> list[HostKey]:
        pattern = host_pattern(host, port)
        found = []
        for line in self._lines():
            parts = line.split()
            if len(parts) >= 3 and not line.startswith("#") and pattern in parts[0].split(","):
                found.append(HostKey(parts[1], parts[2]))
        return found

    # --- the policy ------------------------------------------------------------------

    def check(self, host: str, port: int, key: HostKey) -> None:
        """accept-new: record an unknown host's key; refuse a key that differs from the record."""
        with self._locked():
            known = self.lookup(host, port)
            if not known:
                self._append(host, port, key)
                return
        if any(k.family == key.family and k.base64 == key.base64 for k in known):
            return
        raise changed_key_error(host, port, self.path)

    def remember(self, host: str, port: int, key: HostKey) -> None:
        """Pre-seed a key an engine knows up front (replaces any record of HOST:PORT)."""
        with self._locked():
            kept = [ln for ln in self._lines() if not _names(ln, host, port)]
            kept.append(f"{host_pattern(host, port)} {key.family} {key.base64}")
            self._write(kept)

    def forget(self, host: str, port: int) -> int:
        """Drop every record of HOST:PORT (after a rebuild). Returns how many were removed."""
        with self._locked():
            lines = self._lines()
            kept = [ln for ln in lines if not _names(ln, host, port)]
            if len(kept) != len(lines):
                self._write(kept)
            return len(lines) - len(kept)

    # --- writing ---------------------------------------------------------------------

    def _append(self, host: str, port: int, key: HostKey) -> None:
        lines = self._lines()
        lines.append(f"{host_pattern(host, port)} {key.family} {key.base64}")
        self._write(lines)

    def _write(self, lines: list[str]) -> None:
        ensure_dir(self.path.parent)
        write_atomic(self.path, "".join(f"{ln}\n" for ln in lines), mode=0o600)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        ensure_dir(self.path.parent)
        lock_path = self.path.with_name(self.path.name + ".lock")
        with _THREAD_LOCK:
            fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)


def _names(line: str, host: str, port: int) -> bool:
    parts = line.split()
    return bool(parts) and host_pattern(host, port) in parts[0].split(",")


def changed_key_error(host: str, port: int, path: Path) -> NodeUnreachable:
    where = display(host, port)
    return NodeUnreachable(
        f"host key for {where} changed since skyform first connected "
        f"(recorded in {path}): possible man-in-the-middle; refusing to connect",
        hint=f"if the node was rebuilt, run `skyform known-hosts forget {where}` and retry",
    )
