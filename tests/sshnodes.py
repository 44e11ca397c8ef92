"""Real sshd nodes on loopback for tests and benchmarks (see ../shared/notes/ssh-test-nodes.md).

Each node is its own Unix user with its own home, host key and authorized_keys, served by an
sshd that is PID 1 of its own PID namespace (`setsid unshare --pid --fork --kill-child
--mount-proc sshd -D`), so killing that PID 1 ends every process of the node — a faithful
preemption. Node i listens on 127.0.100.<i+1>:<free port>, so SKYFORM_NODE_IPS are distinct.

Needs root, /usr/sbin/sshd, rsync, unshare, ssh-keygen and useradd; `missing_requirements()`
says what is absent so fixtures can skip with the install command.

    with SSHNodes(4) as nodes:
        handles = nodes.handles()          # list[NodeHandle], rank order
        nodes.kill_node(2)                 # preemption
        nodes.freeze_node(1); nodes.resume_node(1)
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from skyform.state.models import NodeHandle, NodeKind

SSHD = "/usr/sbin/sshd"
INSTALL_HINT = "apt-get install -y --no-install-recommends openssh-server rsync"
USER_PATTERN = re.compile(r"^sfn(\d+)s\d+n\d+$")  # sfn<creator pid>s<set>n<index>
READY_TIMEOUT = 5.0

SSHD_CONFIG = """\
ListenAddress {host}:{port}
HostKey {host_key}
PidFile none
AllowUsers {user}
AuthorizedKeysFile .ssh/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UsePAM no
StrictModes yes
UseDNS no
PrintMotd no
X11Forwarding no
MaxStartups 200
MaxSessions 100
KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org
Subsystem sftp internal-sftp
LogLevel ERROR
"""


def missing_requirements() -> str | None:
    """Why real sshd nodes cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "real sshd test nodes need root (they create one Unix user per node)"
    tools = {
        "sshd": SSHD,
        "rsync": "rsync",
        "unshare": "unshare",
        "setsid": "setsid",
        "ssh-keygen": "ssh-keygen",
        "useradd": "useradd",
    }
    absent = [name for name, exe in tools.items() if not shutil.which(exe)]
    if absent:
        return f"{', '.join(absent)} not installed: {INSTALL_HINT}"
    return None


def enable_user_fuse() -> str | None:
    """Let node users (not root) mount FUSE, as on a cloud VM: /dev/fuse 0666 and
    `user_allow_other` in /etc/fuse.conf (fusermount3 is setuid). Returns why not, or None.
    .ci/run does the same."""
    fuse, conf = Path("/dev/fuse"), Path("/etc/fuse.conf")
    if not fuse.exists():
        return "no /dev/fuse"
    try:
        if fuse.stat().st_mode & 0o666 != 0o666:
            os.chmod(fuse, 0o666)
        lines = conf.read_text().splitlines() if conf.exists() else []
        if "user_allow_other" not in (line.strip() for line in lines):
            conf.write_text("\n".join([*lines, "user_allow_other", ""]))
    except OSError as exc:
        return f"cannot open /dev/fuse to node users: {exc}"
    return None


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, check=check, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )


def _die_with_parent() -> None:
    """preexec: the node dies with the test process, even if that is SIGKILLed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _banner(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(4).startswith(b"SSH-")
    except OSError:
        return False


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _retry_passwd(*argv: str) -> None:
    """useradd/userdel fail while another process holds /etc/passwd's lock: retry briefly."""
    for attempt in range(50):
        proc = _run(*argv, check=False)
        if proc.returncode == 0:
            return
        if "lock" not in proc.stderr or attempt == 49:
            raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
        time.sleep(0.1)


def remove_stale_users() -> None:
    """Delete node users left by a test process that was killed before its teardown."""
    for line in Path("/etc/passwd").read_text().splitlines():
        name = line.split(":", 1)[0]
        match = USER_PATTERN.match(name)
        if match and not _alive(int(match.group(1))):
            _retry_passwd("userdel", "-f", name)


@dataclass
class SSHNode:
    index: int
    user: str
    home: Path
    etc: Path  # root-only: sshd_config, host key, log
    host: str
    port: int
    proc: subprocess.Popen | None = None

    @property
    def config(self) -> Path:
        return self.etc / "sshd_config"

    @property
    def host_key(self) -> Path:
        return self.etc / "ssh_host_ed25519_key"

    @property
    def init_pid(self) -> int | None:
        """PID (in our namespace) of the node's PID 1: the sshd listener."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        with contextlib.suppress(OSError):
            pids = children.read_text().split()
            if pids:
                return int(pids[0])
        return None

    def public_host_key(self) -> str:
        """`type base64` of the node's host key, as it appears in known_hosts."""
        return " ".join(Path(f"{self.host_key}.pub").read_text().split()[:2])


class SSHNodes:
    """N loopback sshd nodes plus a client key pair (and a second, unauthorized key)."""

    _sets = itertools.count()

    def __init__(self, count: int) -> None:
        reason = missing_requirements()
        if reason:
            raise RuntimeError(reason)
        self.count = count
        self.serial = next(SSHNodes._sets)
        self.nodes: list[SSHNode] = []
        self.base = Path(tempfile.mkdtemp(prefix=f"skyform-nodes-{os.getpid()}-", dir="/tmp"))
        os.chmod(self.base, 0o755)  # node users must traverse it to reach their homes
        self.client = self.base / "client"
        self.client.mkdir(mode=0o700)
        self.key = self.client / "id_ed25519"
        self.wrong_key = self.client / "id_wrong"
        # PDEATHSIG fires when the *thread* that forked exits: spawn from one that lives as
        # long as the nodes, so start_node() may be called from any thread.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sshnodes")

    # --- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> SSHNodes:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        enable_user_fuse()
        remove_stale_users()
        for key in (self.key, self.wrong_key):
            _run(
                "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "skyform-test", "-f", str(key)
            )
        for i in range(self.count):
            self.nodes.append(self._create_node(i))
        for node in self.nodes:
            self._spawn(node)
        for node in self.nodes:
            self._wait_ready(node)

    def close(self) -> None:
        for node in self.nodes:
            self._stop(node)
        for node in self.nodes:
            with contextlib.suppress(RuntimeError):
                _retry_passwd("userdel", "-f", node.user)
        shutil.rmtree(self.base, ignore_errors=True)
        self.nodes = []
        self._spawner.shutdown()

    def _create_node(self, i: int) -> SSHNode:
        user = f"sfn{os.getpid()}s{self.serial}n{i}"
        home = self.base / f"home{i}"
        etc = self.base / f"etc{i}"
        etc.mkdir(mode=0o700)
        # -p "*": with UsePAM no, a locked ("!") password refuses even pubkey logins
        _retry_passwd("useradd", "-M", "-d", str(home), "-s", "/bin/bash", "-p", "*", user)
        ssh_dir = home / ".ssh"
        ssh_dir.mkdir(parents=True)
        authorized = ssh_dir / "authorized_keys"
        authorized.write_text(Path(f"{self.key}.pub").read_text())
        os.chmod(home, 0o700)
        os.chmod(ssh_dir, 0o700)
        os.chmod(authorized, 0o600)
        _run("chown", "-R", f"{user}:{user}", str(home))
        node = SSHNode(i, user, home, etc, host=f"127.0.100.{i + 1}", port=0)
        self._write_host_key(node)
        return node

    def _write_host_key(self, node: SSHNode) -> None:
        for path in (node.host_key, Path(f"{node.host_key}.pub")):
            path.unlink(missing_ok=True)
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(node.host_key))

    def _spawn(self, node: SSHNode) -> None:
        if node.port == 0:
            node.port = _free_port(node.host)
        node.config.write_text(
            SSHD_CONFIG.format(
                host=node.host, port=node.port, host_key=node.host_key, user=node.user
            )
        )
        argv = ["setsid", "unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]
        argv += [SSHD, "-D", "-f", str(node.config), "-E", str(node.etc / "sshd.log")]
        node.proc = self._spawner.submit(
            subprocess.Popen,
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            preexec_fn=_die_with_parent,
        ).result()

    def _wait_ready(self, node: SSHNode) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if _banner(node.host, node.port):
                return
            if node.proc is not None and node.proc.poll() is not None:
                log = (node.etc / "sshd.log").read_text(errors="replace")
                raise RuntimeError(f"sshd for node {node.index} exited: {log.strip()}")
            time.sleep(0.02)
        raise RuntimeError(f"sshd for node {node.index} did not answer on {node.host}:{node.port}")

    def _stop(self, node: SSHNode) -> None:
        if node.proc is None:
            return
        pid = node.init_pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)  # a frozen node must die too
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            node.proc.kill()
        node.proc.wait(timeout=10)
        node.proc = None
        self._wait_user_gone(node)

    def _wait_user_gone(self, node: SSHNode, timeout: float = 5.0) -> None:
        """The namespace's other processes die asynchronously after its PID 1."""
        uid = _run("id", "-u", node.user).stdout.strip()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.user_pids(node.index, uid=uid):
                return
            time.sleep(0.02)

    # --- what tests use ------------------------------------------------------------------

    def handles(self) -> list[NodeHandle]:
        return [self.handle(i) for i in range(len(self.nodes))]

    def handle(self, i: int, *, key: Path | None = None) -> NodeHandle:
        node = self.nodes[i]
        return NodeHandle(
            rank=i,
            kind=NodeKind.SSH,
            host=node.host,
            port=node.port,
            user=node.user,
            identity_file=str(key or self.key),
            ip=node.host,
            node_id=f"{node.host}:{node.port}",
        )

    def kill_node(self, i: int) -> None:
        """Preemption: kill the node's PID 1, which ends every process of the node."""
        node = self.nodes[i]
        pid = node.init_pid
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        if node.proc is not None:
            node.proc.wait(timeout=10)
            node.proc = None
        self._wait_user_gone(node)

    def start_node(self, i: int) -> None:
        """Bring a killed node back on the same address, home and host key."""
        node = self.nodes[i]
        if node.proc is None:
            self._spawn(node)
            self._wait_ready(node)

    def rotate_host_key(self, i: int) -> None:
        """Give node i a new host key (a rebuilt node, or a man in the middle)."""
        self.kill_node(i)
        self._write_host_key(self.nodes[i])
        self.start_node(i)

    def freeze_node(self, i: int) -> None:
        """SIGSTOP the listener: TCP still connects, the SSH banner never comes."""
        pid = self.nodes[i].init_pid
        assert pid is not None, f"node {i} is not running"
        os.kill(pid, signal.SIGSTOP)

    def resume_node(self, i: int) -> None:
        pid = self.nodes[i].init_pid
        if pid is not None:
            os.kill(pid, signal.SIGCONT)

    def in_node(self, i: int, *argv: str) -> subprocess.CompletedProcess:
        """Run a command as root inside node i's mount namespace (e.g. to mount a tmpfs)."""
        pid = self.nodes[i].init_pid
        assert pid is not None, f"node {i} is not running"
        return _run("nsenter", "-t", str(pid), "-m", "--", *argv, check=False)

    def user_pids(self, i: int, *, uid: str | None = None) -> list[int]:
        """PIDs of processes owned by node i's user (sshd sessions included)."""
        uid = uid or _run("id", "-u", self.nodes[i].user).stdout.strip()
        found = []
        for status in Path("/proc").glob("[0-9]*/status"):
            with contextlib.suppress(OSError):
                for line in status.read_text().splitlines():
                    if line.startswith("Uid:"):
                        if line.split()[1] == uid:
                            found.append(int(status.parent.name))
                        break
        return found

    def reset_home(self, i: int) -> None:
        """Remove everything in node i's home but .ssh (isolation between tests)."""
        home = self.nodes[i].home
        for entry in home.iterdir():
            if entry.name != ".ssh":
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
