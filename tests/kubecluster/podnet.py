"""The test cluster's pod network: one Linux bridge per cluster in the root namespace, and per
pod a network namespace joined to it by a veth pair.

A cluster owns the block 10.244.<slot>.0/24: the bridge is .1 and pods get .2 to .254. The
slot is held with a lock file for the cluster's lifetime, so test processes running side by
side (pytest -n 2) get disjoint blocks, and a slot's leftovers (a killed test process) are
removed by its next owner. The bridge's connected route keeps every address of the block on
this machine: a packet to a pod that is gone ends in a failed ARP here, never off the machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from pathlib import Path

LOCK_DIR = Path("/run/lock")
SLOTS = range(1, 200)
PREFIX = "10.244"


def ip(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["ip", *argv], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(argv)}: {proc.stderr.strip()}")
    return proc


class PodNetwork:
    def __init__(self) -> None:
        self.slot, self._lock = self._take_slot()
        self.bridge = f"sfkb{self.slot}"
        self.gateway = f"{PREFIX}.{self.slot}.1"
        self._free = list(range(2, 255))
        self._remove_leftovers()
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")

    @staticmethod
    def _take_slot() -> tuple[int, int]:
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        for slot in SLOTS:
            fd = os.open(LOCK_DIR / f"skyform-kubecluster-{slot}.lock", os.O_CREAT | os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            os.set_inheritable(fd, False)
            return slot, fd
        raise RuntimeError("no free pod network slot (199 test clusters running?)")

    def _namespaces(self) -> list[str]:
        listed = ip("netns", "list", check=False).stdout.split("\n")
        mine = f"sfk{self.slot}-"
        return [line.split()[0] for line in listed if line.startswith(mine)]

    def _remove_leftovers(self) -> None:
        for name in self._namespaces():
            ip("netns", "del", name, check=False)
        # A namespace outlives its name while a socket of it lingers (FIN_WAIT towards a
        # bridge that is gone): delete the veth ends here, which takes their peers along.
        for line in ip("-o", "link", "show", check=False).stdout.splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            if name.startswith(f"sfk{self.slot}v"):
                ip("link", "del", name, check=False)
        ip("link", "del", self.bridge, check=False)

    def add_pod(self, key: str) -> tuple[str, str]:
        """A namespace for a pod: (namespace name, pod address). `key`: short, unique."""
        if not self._free:
            raise RuntimeError(f"pod network {PREFIX}.{self.slot}.0/24 is full")
        host = self._free.pop(0)
        address = f"{PREFIX}.{self.slot}.{host}"
        netns, veth = f"sfk{self.slot}-{key}", f"sfk{self.slot}v{host}"
        ip("link", "del", veth, check=False)  # left by a pod whose namespace lingers
        ip("netns", "add", netns)
        try:
            ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
            ip("link", "set", veth, "master", self.bridge, "up")
            batch = [
                f"addr add {address}/24 dev eth0",
                "link set lo up",
                "link set eth0 up",
                f"route add default via {self.gateway}",
            ]
            for line in batch:
                ip("-n", netns, *line.split())
        except BaseException:
            ip("netns", "del", netns, check=False)
            self._free.insert(0, host)
            raise
        return netns, address

    def remove_pod(self, netns: str, address: str) -> None:
        host = int(address.rsplit(".", 1)[1])
        ip("link", "del", f"sfk{self.slot}v{host}", check=False)
        ip("netns", "del", netns, check=False)
        if host not in self._free:
            self._free.append(host)

    def close(self) -> None:
        self._remove_leftovers()
        with contextlib.suppress(OSError):
            os.close(self._lock)
