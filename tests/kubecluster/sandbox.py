"""A pod without a container runtime: the pod's own command, run as PID 1 of fresh PID, mount
and UTS namespaces inside the pod's network namespace, on this machine's file system with
what makes it the pod's own:

- /root (the home of the pod's root user), /tmp and /run are the pod's, empty at start;
- /etc is an overlay on the machine's /etc, so the pod may write there (its sshd host keys,
  its mount points) and nothing reaches the machine's; its /etc/hosts names the pod, and its
  resolv.conf sends lookups to the pod's own loopback, where they fail at once;
- its volumes: a Secret's keys as files (read-only), an emptyDir (medium Memory: a tmpfs);
- its sshd gets a host key of its own and the settings the ssh-pool test nodes use
  (MaxStartups, a fast key exchange) from a drop-in in /etc/ssh/sshd_config.d.

The image is not used: the command runs with this machine's programs (skyform's pods run
`sh -c <install and start sshd>`, and sshd is installed here). Killing PID 1 ends every
process of the pod, as a container's end does.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

SSHD_DROP_IN = """\
HostKey /etc/ssh/ssh_host_ed25519_key
MaxStartups 200
MaxSessions 100
KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org
UseDNS no
"""
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
}


class PodRefused(Exception):
    """The pod asks for something this runtime cannot give it (an event's message)."""


@dataclass
class Volume:
    mount_path: str
    source: Path | None  # a directory to bind; None: a tmpfs
    read_only: bool = False


@dataclass
class PodSpec:
    """What of a Pod object the sandbox runs (built by the agent from the API object)."""

    uid: str
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    volumes: list[Volume] = field(default_factory=list)
    working_dir: str | None = None


def die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the pod dies with the test process


# PDEATHSIG fires when the forking *thread* exits: fork pods from one long-lived thread.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kubecluster-pods")


def _wait_exited(pid: int, timeout: float = 5.0) -> None:
    """Until `pid`, a PID namespace's PID 1, is a zombie or gone: the kernel makes PID 1 a
    zombie only after every other process of its namespace has exited. (Killing unshare
    does not wait for that.)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)


class Sandbox:
    def __init__(self, spec: PodSpec, netns: str, address: str, root: Path) -> None:
        self.spec, self.netns, self.address, self.dir = spec, netns, address, root
        self.proc: subprocess.Popen | None = None
        self.log = root / "container.log"

    def _prepare(self) -> str:
        """Make the pod's directories; return the shell text that mounts them."""
        for sub in ("root", "tmp", "etc-upper/ssh/sshd_config.d", "etc-work"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir / "root", 0o700)
        os.chmod(self.dir / "tmp", 0o1777)
        # As the kubelet writes them: /etc/hosts names the pod, and name lookups get a quick
        # answer (here a refusal on the pod's own loopback: no cluster DNS runs), not a
        # time-out on a server this namespace cannot reach (Python's http.server looks its
        # address up before it listens).
        etc = self.dir / "etc-upper"
        (etc / "hosts").write_text(
            f"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
            f"{self.address}\t{self.spec.name}\n"
        )
        (etc / "resolv.conf").write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        ssh = etc / "ssh"
        (ssh / "sshd_config.d" / "zz-skyform-test.conf").write_text(SSHD_DROP_IN)
        key = ssh / "ssh_host_ed25519_key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.spec.name, "-f", str(key)],
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
        q = shlex.quote
        # The sources are bound under /run/.sources first: binding /tmp and /root hides the
        # machine's, where the pod's directory (a pytest tmp dir) may well live.
        stage = "/run/.sources"
        lines = [
            "set -e",
            "mount -t tmpfs -o mode=755 tmpfs /run",
            f"mkdir -p {stage}/pod",
            f"mount --bind {q(str(self.dir))} {stage}/pod",
        ]
        for index, volume in enumerate(self.spec.volumes):
            if volume.source is not None:
                lines.append(f"mkdir {stage}/v{index}")
                lines.append(f"mount --bind {q(str(volume.source))} {stage}/v{index}")
        lines += [
            f"mount -t overlay overlay -o lowerdir=/etc,upperdir={stage}/pod/etc-upper"
            f",workdir={stage}/pod/etc-work /etc",
            f"mount --bind {stage}/pod/root /root",
            f"mount --bind {stage}/pod/tmp /tmp",
            f"hostname {q(self.spec.name[:63])}",
        ]
        for index, volume in enumerate(self.spec.volumes):
            target = q(volume.mount_path)
            lines.append(f"mkdir -p {target}")
            if volume.source is None:
                lines.append(f"mount -t tmpfs tmpfs {target}")
            else:
                lines.append(f"mount --bind {stage}/v{index} {target}")
                if volume.read_only:
                    lines.append(f"mount -o remount,bind,ro {target}")
        # The mounts are made: the pod's command starts now (the agent waits for this mark).
        lines += [f"touch {stage}/pod/started", f"umount -l {stage}/* ", f"rm -rf {stage}"]
        return "\n".join(lines)

    def start(self) -> None:
        for volume in self.spec.volumes:
            top = volume.mount_path.strip("/").split("/")[0]
            if not Path("/" + top).exists() and top not in ("etc", "root", "tmp", "run"):
                raise PodRefused(
                    f"volume mount path {volume.mount_path}: the test node agent can only "
                    "create mount points under an existing top-level directory"
                )
        setup = self._prepare()
        env = dict(BASE_ENV, HOSTNAME=self.spec.name[:63], **self.spec.env)
        exec_line = "exec env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
        if self.spec.working_dir:
            setup += f"\ncd {shlex.quote(self.spec.working_dir)}"
        script = f"{setup}\n{exec_line} " + " ".join(shlex.quote(a) for a in self.spec.argv)
        argv = ["ip", "netns", "exec", self.netns]
        argv += ["unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc"]
        argv += ["/bin/sh", "-c", script]
        with self.log.open("ab") as out:
            self.proc = _SPAWNER.submit(
                subprocess.Popen,
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                close_fds=True,
                start_new_session=True,
                preexec_fn=die_with_parent,
            ).result()

    def started(self) -> bool:
        """The sandbox is made and the pod's own command runs (or ran)."""
        return (self.dir / "started").exists()

    @property
    def init_pid(self) -> int | None:
        """The pod's PID 1 (as this machine numbers it): unshare's only child."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        with contextlib.suppress(OSError):
            pids = children.read_text().split()
            if pids:
                return int(pids[0])
        return None

    def exit_code(self) -> int | None:
        """None while the pod's command runs; else its exit status (128+N: killed by N)."""
        if self.proc is None:
            return None
        code = self.proc.poll()
        if code is None:
            return None
        return 128 - code if code < 0 else code

    def kill(self) -> None:
        """End every process of the pod (a crash, as `kill -9` of the container). Returns
        once they have all exited, so their sockets are closed (peers get their FIN or RST)
        before anything removes the pod's network."""
        pid = self.init_pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait(timeout=10)
        if pid is not None:
            _wait_exited(pid)

    def remove(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, chars: int = 2000) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-chars:]
        return ""
