"""Replica sandboxes: each replica of a service on one machine gets its own network namespace
and address, so every replica binds the port its task file names (`python -m server --port
8080` twice on one host), as it would on a machine of its own.

A sandbox is a Linux network namespace `skyform-<n>` joined to the host by a veth pair on
a /30 of 10.213.0.0/16: the host side is .1, the replica .2, and the load balancer reaches
the replica at `http://10.213.x.(y+2):PORT`. Needs root (CAP_NET_ADMIN) and iproute2;
`available()` says why not otherwise. Commands run inside with `ip netns exec`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shlex
import shutil
import subprocess
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from skyform.errors import SkyformError

PREFIX = "skyform-"
NETWORK = ipaddress.ip_network("10.213.0.0/16")
MAX_SANDBOXES = NETWORK.num_addresses // 4


@dataclass(frozen=True)
class Sandbox:
    index: int

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.index}"

    @property
    def host_interface(self) -> str:
        return f"sfh{self.index}"  # at most 15 characters, as Linux allows

    @property
    def replica_interface(self) -> str:
        return f"sfr{self.index}"

    @property
    def host_address(self) -> str:
        return str(NETWORK.network_address + 4 * self.index + 1)

    @property
    def address(self) -> str:
        """Where the replica is reached from this machine."""
        return str(NETWORK.network_address + 4 * self.index + 2)

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the sandbox."""
        return ["ip", "netns", "exec", self.name, *argv]

    def shell(self, script: str) -> list[str]:
        return self.command(["bash", "-c", script])


_CHECKED: list[str | None] = []
_CHECKING = threading.Lock()


def available() -> str | None:
    """None when sandboxes can be made here, else why not (tried once per process: a
    container may run as root without the capabilities namespaces need)."""
    with _CHECKING:
        if not _CHECKED:
            _CHECKED.append(_try_namespaces())
        return _CHECKED[0]


def _try_namespaces() -> str | None:
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN)"
    probe = f"{PREFIX}probe-{uuid.uuid4().hex[:12]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` is not allowed here: {made.stderr.strip()}"
    veth = subprocess.run(
        ["ip", "-n", probe, "link", "add", "sfprobe0", "type", "veth", "peer", "name", "sfprobe1"],
        capture_output=True,
        text=True,
    )
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if veth.returncode != 0:
        return f"veth pairs are not allowed here: {veth.stderr.strip()}"
    return None


def existing() -> set[int]:
    out = _ip(["netns", "list"], check=False)
    found = set()
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(PREFIX) and name[len(PREFIX) :].isdigit():
            found.add(int(name[len(PREFIX) :]))
    return found


def create() -> Sandbox:
    """A new sandbox with the lowest free index."""
    why = available()
    if why is not None:
        raise SkyformError(
            f"cannot give each replica its own network namespace: {why}",
            "Run as root, or give the replicas different ports.",
        )
    box = _claim(existing())
    steps = [
        ["link", "add", box.host_interface, "type", "veth", "peer", "name", box.replica_interface],
        ["link", "set", box.replica_interface, "netns", box.name],
        ["addr", "add", f"{box.host_address}/30", "dev", box.host_interface],
        ["link", "set", box.host_interface, "up"],
        ["-n", box.name, "addr", "add", f"{box.address}/30", "dev", box.replica_interface],
        ["-n", box.name, "link", "set", box.replica_interface, "up"],
        ["-n", box.name, "link", "set", "lo", "up"],
        ["-n", box.name, "route", "add", "default", "via", box.host_address],
    ]
    try:
        for step in steps:
            _ip(step)
    except SkyformError:
        destroy(box)
        raise
    return box


def _claim(taken: set[int]) -> Sandbox:
    """The lowest free index; `ip netns add` is the lock (another process may claim first)."""
    for index in range(MAX_SANDBOXES):
        if index in taken:
            continue
        proc = subprocess.run(
            ["ip", "netns", "add", f"{PREFIX}{index}"], capture_output=True, text=True
        )
        if proc.returncode == 0:
            return Sandbox(index)
        if "exists" not in proc.stderr:
            raise SkyformError(f"`ip netns add` failed: {proc.stderr.strip()}")
    raise SkyformError(f"all {MAX_SANDBOXES} replica sandboxes are in use")


def destroy(box: Sandbox) -> None:
    """Kill what runs inside, then remove the namespace (its veth pair goes with it)."""
    pids = _ip(["netns", "pids", box.name], check=False).split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 9)
    _ip(["netns", "del", box.name], check=False)
    _ip(["link", "del", box.host_interface], check=False)


def _ip(args: list[str], *, check: bool = True) -> str:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        shown = " ".join(shlex.quote(a) for a in args)
        raise SkyformError(f"`ip {shown}` failed: {proc.stderr.strip()}")
    return proc.stdout
