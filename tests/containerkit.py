"""A container image and a podman that runs it, for tests on real sshd nodes (no registry).

The image is a root file system of this machine's own bash and a few coreutils with the
libraries they link (about 5 MB; `tar` + `podman import` take ~2 s), plus a marker file that
only exists inside it. A Debian root file system from debootstrap works the same way but
costs about 2 minutes and 200 MB to build (measured here), which CI cannot spare per run.

Each sshd node's user runs podman rootless (no daemon, no sudo): the image is imported into
its own storage. This machine's cgroups are hybrid (v1 controllers plus a v2 mount), where
crun refuses to start containers ("cgroups in hybrid mode not supported, drop all controllers
from cgroupv2"), so the node user's containers.conf selects runc, as a host admin would.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

IMAGE = "localhost/skyform-e2e:1"
MARKER = "/etc/skyform-image"  # exists only inside the image
TOOLS = ("bash", "cat", "ls", "id", "pwd", "sleep", "mkdir", "rm", "env")
NODE_CONF = '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
INSTALL = "apt-get install -y --no-install-recommends podman runc uidmap"


def missing() -> str | None:
    """Why podman cannot run the test image here, or None."""
    absent = [t for t in ("podman", "runc", "newuidmap", "ldd", "runuser", "nsenter")]
    absent = [t for t in absent if not shutil.which(t)]
    if absent:
        return f"{', '.join(absent)} not installed: {INSTALL}"
    return None


def _libraries(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return [word for line in out.splitlines() for word in line.split() if word.startswith("/")]


def build_image_tar(path: Path) -> Path:
    """The image's root file system as a tar at `path`."""
    with tarfile.open(path, "w") as tar:
        added: set[str] = set()
        for tool in TOOLS:
            binary = shutil.which(tool)
            assert binary is not None, tool
            for file in [os.path.realpath(binary), *_libraries(binary)]:
                real = os.path.realpath(file)
                name = file.lstrip("/")
                if name not in added:
                    tar.add(real, arcname=name)
                    added.add(name)
            name = f"usr/bin/{tool}"
            if name not in added:
                tar.add(os.path.realpath(binary), arcname=name)
                added.add(name)
        marker = path.with_suffix(".marker")
        marker.write_text("inside the image\n")
        tar.add(marker, arcname=MARKER.lstrip("/"))
        for link, target in (("bin", "usr/bin"),):
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        for folder in ("tmp", "proc", "sys", "dev", "opt", "root"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            tar.addfile(info)
    os.chmod(path, 0o644)
    return path


def as_user(user: str, home: Path, *argv: str, stdin=subprocess.DEVNULL, node_pid=None):
    """Run as the node's user (inside its PID and mount namespaces when `node_pid`, the
    node's init, is given: a rootless podman's pause process lives there)."""
    enter = ["nsenter", "-t", str(node_pid), "-p", "-m", "--"] if node_pid else []
    return subprocess.run(
        [*enter, "runuser", "-u", user, "--", "env", f"HOME={home}", *argv],
        capture_output=True,
        cwd=home,
        stdin=stdin,
        timeout=120,
    )


def give_node_podman(user: str, home: Path, image_tar: Path) -> None:
    """Node user: runc in its containers.conf, and the test image in its own storage."""
    conf = home / ".config" / "containers"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "containers.conf").write_text(NODE_CONF)
    subprocess.run(["chown", "-R", f"{user}:{user}", str(home / ".config")], check=True)
    with open(image_tar, "rb") as tar:  # the node user cannot read the test's folders
        made = as_user(user, home, "podman", "import", "-", IMAGE, stdin=tar)
    assert made.returncode == 0, made.stderr.decode(errors="replace")


def node_containers(nodes, i: int = 0) -> list[str]:
    """Names of node i's user's containers (running or not)."""
    node = nodes.nodes[i]
    listed = as_user(
        node.user, node.home, "podman", "ps", "-a", "--format", "{{.Names}}",
        node_pid=node.init_pid,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr.decode(errors="replace")
    return listed.stdout.decode().split()


def remove_podman_leftovers(user: str) -> None:
    """Rootless podman's folders in /tmp for the user (its storage is in the node's home,
    which goes with the node; these would outlive it)."""
    uid = pwd.getpwnam(user).pw_uid
    for folder in (f"/tmp/containers-user-{uid}", f"/tmp/podman-run-{uid}"):
        shutil.rmtree(folder, ignore_errors=True)


# Root's podman for one test, in a folder of its own (storage too: vfs, no mounts to undo).
# default_ulimits at this machine's hard limits: podman's default nofile is above them, and
# the sandbox lacks CAP_SYS_RESOURCE ("error setting rlimit type 7: operation not permitted").
ROOT_CONF = """[containers]
default_ulimits = ["nofile={files}:{files}", "nproc={procs}:{procs}"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


@contextlib.contextmanager
def rootful_podman(user: str, image_tar: Path) -> Iterator[dict[str, str]]:
    """The node user may run podman as root through passwordless sudo (a sudoers rule, as a
    host's admin writes one) and has no subordinate ids (rootless is not configured). Root's
    podman reads its config and storage from a folder of this test's, named in the rule's
    env_file; the image is imported there. Yields the env that points root's podman here at
    the same storage; everything is removed after."""
    import resource

    folder = Path(tempfile.mkdtemp(prefix="skyform-e2e-rootful-", dir="/tmp"))
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    procs = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    (folder / "containers.conf").write_text(ROOT_CONF.format(files=files, procs=procs))
    (folder / "storage.conf").write_text(
        f'[storage]\ndriver = "vfs"\ngraphroot = "{folder}/storage"\nrunroot = "{folder}/run"\n'
    )
    env = {
        "CONTAINERS_CONF": f"{folder}/containers.conf",
        "CONTAINERS_STORAGE_CONF": f"{folder}/storage.conf",
    }
    (folder / "podman.env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    rule = Path(f"/etc/sudoers.d/skyform-e2e-{user}")
    draft = folder / "sudoers"
    draft.write_text(
        f"Defaults:{user} env_file={folder}/podman.env\n"
        f"{user} ALL=(root) NOPASSWD: {shutil.which('podman')}\n"
    )
    draft.chmod(0o440)
    try:
        subprocess.run(["visudo", "-cqf", str(draft)], check=True)
        _drop_subordinate_ids(user)
        shutil.move(draft, rule)
        podman_env = {**os.environ, **env}
        made = subprocess.run(
            ["podman", "import", str(image_tar), IMAGE], env=podman_env, capture_output=True
        )
        assert made.returncode == 0, made.stderr.decode(errors="replace")
        yield podman_env
    finally:
        rule.unlink(missing_ok=True)
        subprocess.run(["podman", "rm", "-af"], env={**os.environ, **env}, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _drop_subordinate_ids(user: str) -> None:
    """Remove the user's /etc/subuid and /etc/subgid lines, under shadow's own lock (a hard
    link TABLE.lock, as useradd takes it; usermod refuses while the node's user has processes)."""
    for table in (Path("/etc/subuid"), Path("/etc/subgid")):
        lock = table.with_name(table.name + ".lock")
        mine = table.with_name(f"{table.name}.{os.getpid()}")
        mine.write_text(f"{os.getpid()}\0")
        try:
            for _ in range(100):
                try:
                    os.link(mine, lock)
                    break
                except FileExistsError:
                    time.sleep(0.05)
            else:
                raise AssertionError(f"{lock} stayed locked")
            try:
                kept = [ln for ln in table.read_text().splitlines() if ln.split(":")[0] != user]
                draft = table.with_name(f"{table.name}.skyform-test")
                draft.write_text("".join(f"{ln}\n" for ln in kept))
                os.chmod(draft, table.stat().st_mode & 0o777)
                os.replace(draft, table)
            finally:
                lock.unlink()
        finally:
            mine.unlink()


def root_containers(env: dict[str, str]) -> list[str]:
    listed = subprocess.run(
        ["podman", "ps", "-a", "--format", "{{.Names}}"], env=env, capture_output=True
    )
    assert listed.returncode == 0, listed.stderr.decode(errors="replace")
    return listed.stdout.decode().split()
