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

import os
import pwd
import shutil
import subprocess
import tarfile
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
