"""`image_id: docker:IMAGE` on an ssh pool whose host has podman: setup and run execute in
the container (its own files, what setup installed there), in the synced workdir, with file
mounts mapped (in the home and outside it: a new destination makes the container again, and
setup runs again in it); cancel stops the job inside the container; `down` removes it.
Real sshd node, real podman (rootless, as the node's user), an image built on this machine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import containerkit
import pytest
from e2ekit import task_file, write_pool

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def image_tar(tmp_path_factory):
    why = containerkit.missing()
    if why:
        pytest.skip(why)
    return containerkit.build_image_tar(tmp_path_factory.mktemp("image") / "image.tar")


@pytest.fixture
def podman_node(make_ssh_nodes, image_tar):
    nodes = make_ssh_nodes(1)
    node = nodes.nodes[0]
    containerkit.give_node_podman(node.user, node.home, image_tar)
    yield nodes
    containerkit.remove_podman_leftovers(node.user)


def _out(text: str, cluster: str) -> list[str]:
    mark = f"({cluster}, node=0) "
    return [line.split(mark, 1)[1] for line in text.splitlines() if mark in line]


def test_setup_and_run_execute_inside_the_container(
    sky, skyform_home, tmp_path, podman_node, request
):
    node = podman_node.nodes[0]
    write_pool(skyform_home, podman_node, [0])
    checked = sky("check", check=0).stdout
    assert "container runtime: podman" in checked, checked
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "data.txt").write_text("from the workdir\n")
    (tmp_path / "app.ini").write_text("[app]\n")
    task = task_file(
        tmp_path,
        "boxed.yaml",
        f"name: boxed\nworkdir: ./code\n"
        f"resources: {{infra: ssh/lab, image_id: 'docker:{containerkit.IMAGE}'}}\n"
        "file_mounts:\n  ~/conf/app.ini: ./app.ini\n"
        "setup: echo installed > /opt/tool\n"
        f"run: |\n  cat {containerkit.MARKER} /opt/tool data.txt ~/conf/app.ini\n"
        "  pwd\n  id -u\n",
    )
    planned = sky("plan", task, check=0)
    assert re.search(rf'\+ container +\= "{containerkit.IMAGE}"', planned.stdout), planned.stdout
    applied = sky("apply", task, "-y", timeout=300, check=0)
    lines = _out(applied.stdout, "boxed")
    assert lines == [
        "inside the image",  # the image's own file
        "installed",  # what setup left in the container
        "from the workdir",  # the workdir, synced to the host, mapped in
        "[app]",  # a file mount under the home
        f"{node.home}/skyform_workdir",  # jobs start in the workdir, as on a bare node
        "0",  # the image's user (root inside; the node user outside, rootless)
    ], applied.stdout
    assert containerkit.node_containers(podman_node) == ["skyform-boxed"]

    # a new mount destination outside the home: the container is made again with it mapped,
    # and setup runs again in the new container (what it installed went with the old one)
    outside = Path(f"/tmp/skyform-e2e-box-{uuid.uuid4().hex[:8]}")  # the node user may make it
    request.addfinalizer(lambda: shutil.rmtree(outside, ignore_errors=True))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.txt").write_text("outside the home\n")
    task.write_text(
        task.read_text().replace("file_mounts:\n", f"file_mounts:\n  {outside}/data: ./data\n")
        .replace("  pwd\n  id -u\n", f"  cat {outside}/data/x.txt\n")
    )  # fmt: skip
    again = _out(sky("apply", task, "-y", timeout=300, check=0).stdout, "boxed")
    assert again == [*lines[:4], "outside the home"], again
    assert containerkit.node_containers(podman_node) == ["skyform-boxed"]

    # cancel reaches the job inside the container, not only the runtime's exec client
    sky("exec", "boxed", "-d", "sleep 300", check=0)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _sleeping(podman_node):
        time.sleep(0.2)
    assert _sleeping(podman_node), "the job never started in the container"
    sky("cancel", "boxed", "3", check=0)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _sleeping(podman_node):
        time.sleep(0.2)
    assert not _sleeping(podman_node), "cancel left the job running in the container"

    sky("down", "boxed", "-y", timeout=120, check=0)
    assert containerkit.node_containers(podman_node) == []


def test_ssh_lands_in_the_container_and_exec_makes_a_lost_one_again_with_setup(
    sky, skyform_home, tmp_path, podman_node
):
    node = podman_node.nodes[0]
    write_pool(skyform_home, podman_node, [0])
    sky("check", check=0)
    task = task_file(
        tmp_path,
        "dev.yaml",
        f"name: dev\nresources: {{infra: ssh/lab, image_id: 'docker:{containerkit.IMAGE}'}}\n"
        "setup: echo setting up; echo installed > /opt/tool\n"
        "run: cat /opt/tool\n",
    )
    sky("apply", task, "-y", timeout=300, check=0)

    # `ssh C -- CMD` runs CMD in the container (only the image has the marker), exit code kept
    inside = sky("ssh", "dev", "--", "cat", containerkit.MARKER, "/opt/tool", check=0)
    assert inside.stdout.splitlines() == ["inside the image", "installed"], inside.output
    assert sky("ssh", "dev", "--", "exit", "7").exit_code == 7
    # `ssh C` without a command: a shell in the container, in the home (here read from stdin)
    shell = sky("ssh", "dev", stdin=f"cat {containerkit.MARKER}; pwd; echo $HOME\n", check=0)
    assert shell.stdout.splitlines() == ["inside the image", str(node.home), str(node.home)]
    # in a terminal (util-linux's `script` gives it one): `-it`, the container's prompt
    typed = subprocess.run(
        ["script", "-qec", f"{sys.executable} -m skyform.cli.main ssh dev", "/dev/null"],
        input=f"cat {containerkit.MARKER}; exit 4\n".encode(),
        env=dict(os.environ, SKYFORM_HOME=str(skyform_home)),
        capture_output=True,
        timeout=60,
    )
    assert typed.returncode == 4, typed
    assert b"\r\ninside the image\r\n" in typed.stdout, typed.stdout

    # the container is removed on the node: ssh says so, and exec makes it again, runs the
    # cluster's setup in it, then the command
    gone = containerkit.as_user(
        node.user, node.home, "podman", "rm", "-f", "skyform-dev", node_pid=node.init_pid
    )
    assert gone.returncode == 0, gone.stderr
    lost = sky("ssh", "dev", "--", "true")
    assert lost.exit_code == 255, lost.output
    assert "container skyform-dev is not running on this node" in lost.stderr, lost.stderr
    assert "skyform exec dev true" in lost.stderr
    again = sky("exec", "dev", "cat /opt/tool", timeout=300, check=0)
    assert again.stdout.splitlines()[:2] == [
        "(dev, node=0, setup) setting up",  # the cluster's setup, in the new container
        "(dev, node=0) installed",  # then the command, which sees what setup installed
    ], again.output
    assert containerkit.node_containers(podman_node) == ["skyform-dev"]
    # a later exec finds the container as it is: no setup again
    later = sky("exec", "dev", "cat /opt/tool", timeout=120, check=0)
    assert later.stdout.splitlines()[0] == "(dev, node=0) installed", later.output
    # stopped (a node rebooted): started again as it was, what setup installed still there
    stopped = containerkit.as_user(
        node.user, node.home, "podman", "stop", "-t", "0", "skyform-dev", node_pid=node.init_pid
    )
    assert stopped.returncode == 0, stopped.stderr
    assert sky("ssh", "dev", "--", "true").exit_code == 255
    woken = sky("exec", "dev", "cat /opt/tool", timeout=120, check=0)
    assert woken.stdout.splitlines()[0] == "(dev, node=0) installed", woken.output
    sky("down", "dev", "-y", timeout=120, check=0)


def test_rootful_podman_through_sudo_where_rootless_is_not_configured(
    sky, skyform_home, tmp_path, make_ssh_nodes, image_tar
):
    """Debian's podman as root: the node user has no subordinate ids (rootless podman would
    map one id only) and may run `sudo -n podman`, which skyform then uses."""
    nodes = make_ssh_nodes(1)
    node = nodes.nodes[0]
    with containerkit.rootful_podman(node.user, image_tar) as root_env:
        write_pool(skyform_home, nodes, [0])
        assert "container runtime: podman" in sky("check", check=0).stdout
        (tmp_path / "code").mkdir()
        (tmp_path / "code" / "data.txt").write_text("from the workdir\n")
        task = task_file(
            tmp_path,
            "root.yaml",
            f"name: root\nworkdir: ./code\n"
            f"resources: {{infra: ssh/lab, image_id: 'docker:{containerkit.IMAGE}'}}\n"
            "setup: echo installed > /opt/tool\n"
            f"run: cat {containerkit.MARKER} /opt/tool data.txt; id -u\n",
        )
        applied = sky("apply", task, "-y", timeout=300, check=0)
        assert _out(applied.stdout, "root") == [
            "inside the image", "installed", "from the workdir", "0"
        ], applied.output  # fmt: skip
        box = (node.home / ".skyform_node" / "container").read_text().split()
        assert box == ["sudo", "-n", "podman", "skyform-root"]  # root's podman, through sudo
        assert containerkit.root_containers(root_env) == ["skyform-root"]
        inside = sky("ssh", "root", "--", "cat", containerkit.MARKER, "/opt/tool", check=0)
        assert inside.stdout.splitlines() == ["inside the image", "installed"], inside.output
        sky("down", "root", "-y", timeout=120, check=0)
        assert containerkit.root_containers(root_env) == []
    containerkit.remove_podman_leftovers(node.user)


def _sleeping(nodes) -> bool:
    """Does a `sleep 300` run as the node's user (rootless: the container's root)?"""
    for pid in nodes.user_pids(0):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", b"300"]:
                    return True
        except OSError:
            continue
    return False
