"""The command lines a cluster's container gets from each runtime, where no daemon or GPU runs
here: docker and podman are stand-ins on PATH that log their arguments (and, for `exec`, run
the command on this machine), so what a real node's docker or podman would be asked to do is
asserted exactly. Real podman runs the same scripts in tests/e2e/test_containers_ssh.py."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from execkit import local_nodes

from skyform.exec import node_jobs
from skyform.exec.connect import open_runner
from skyform.exec.container import ContainerRequest, enter_command, start_command
from skyform.exec.env import render_env_file
from skyform.exec.node_jobs import NodeJobState
from skyform.exec.teardown import teardown_node

IMAGE = "ghcr.io/acme/train:2.1"

STAND_IN = """#!/bin/bash
{{ printf '%s' "${{0##*/}}"; printf ' %q' "$@"; echo; }} >> "{log}"
case "$1" in
info) [ "$2" = --format ] && echo 2; exit 0 ;;  # (rootless podman: its subordinate ids)
inspect) [ -e "{running}" ] && echo true && exit 0; exit 1 ;;
image) exit 0 ;;
run) echo 0123abcd; exit 0 ;;
exec)
  shift
  while [ "${{1#-}}" != "$1" ]; do
    case $1 in -w) cd "$2" || exit 126; shift 2 ;; -e) export "$2"; shift 2 ;; *) shift ;; esac
  done
  shift
  exec "$@" ;;
esac
"""


def _runtime(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A stand-in runtime `name` alone on PATH (with the system's tools): (bin dir, its log)."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir(parents=True)
    tool = bin_dir / name
    tool.write_text(STAND_IN.format(log=log, running=tmp_path / "running"))
    tool.chmod(0o755)
    return bin_dir, log


def _run(tmp_path: Path, bin_dir: Path, command: str) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        ["/bin/bash", "-c", command],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=30,
    )


def _run_line(tmp_path: Path, runtime: str, request: ContainerRequest) -> list[str]:
    bin_dir, log = _runtime(tmp_path, runtime)
    started = _run(tmp_path, bin_dir, start_command(request, wait=1))
    assert started.stdout.strip() == f"created {runtime}", started
    runs = [shlex.split(c) for c in log.read_text().splitlines() if c.startswith(f"{runtime} run")]
    assert len(runs) == 1, log.read_text()
    return runs[0]


def _has(argv: list[str], words: list[str]) -> bool:
    return any(argv[i : i + len(words)] == words for i in range(len(argv)))


@pytest.mark.parametrize(
    ("runtime", "devices"),
    [("docker", ["--gpus", "all"]), ("podman", ["--device", "nvidia.com/gpu=all"])],
)
def test_a_gpu_task_gets_the_node_gpus_in_its_container(tmp_path, runtime, devices):
    with_gpus = _run_line(tmp_path / "gpu", runtime, ContainerRequest("c1", IMAGE, gpus=True))
    assert _has(with_gpus, devices), with_gpus
    without = _run_line(tmp_path / "cpu", runtime, ContainerRequest("c1", IMAGE))
    assert not _has(without, devices) and "--gpus" not in without, without
    # asking for GPUs later makes the container again (its digest differs)
    plain, gpus = ContainerRequest("c1", IMAGE), ContainerRequest("c1", IMAGE, gpus=True)
    assert plain.digest() != gpus.digest()


def test_docker_command_lines(tmp_path):
    """docker has no daemon here: its whole run line, and `skyform ssh`'s exec, exactly."""
    request = ContainerRequest("c1", IMAGE, binds=("/data",), gpus=True)
    home = str(tmp_path / "home")
    run = _run_line(tmp_path, "docker", request)
    fuse = ["--device", "/dev/fuse"] if Path("/dev/fuse").exists() else []
    assert run == [
        "docker", "run", "-d", "-i", "--name", "skyform-c1",
        "--label", f"skyform.config={request.digest()}", "--net=host", "--cap-add", "SYS_ADMIN",
        *fuse, "--gpus", "all", "-v", f"{home}:{home}",  # (/data absent here: not mapped)
        "--entrypoint", "/bin/bash", IMAGE,
    ]  # fmt: skip

    (tmp_path / "running").touch()
    entered = _run(tmp_path, tmp_path / "bin", enter_command("c1", "echo in; exit 3", tty=False))
    assert (entered.returncode, entered.stdout) == (3, "in\n"), entered
    calls = (tmp_path / "calls").read_text().splitlines()
    assert shlex.split(calls[-1]) == [
        "docker", "exec", "-i", "-w", home, "-e", f"HOME={home}", "skyform-c1",
        "/bin/bash", "-c", "echo in; exit 3",
    ]  # fmt: skip
    shell = _run(tmp_path, tmp_path / "bin", enter_command("c1", "", tty=True) + " </dev/null")
    assert shell.returncode == 0, shell
    calls = (tmp_path / "calls").read_text().splitlines()
    assert shlex.split(calls[-1])[:5] == ["docker", "exec", "-i", "-w", home]
    assert shlex.split(calls[-1])[-4:] == ["-t", "skyform-c1", "/bin/bash", "-l"]

    (tmp_path / "running").unlink()
    gone = _run(tmp_path, tmp_path / "bin", enter_command("c1", "true", tty=False))
    assert gone.returncode == 255
    assert "container skyform-c1 is not running on this node" in gone.stderr


def test_docker_job_lines_from_the_node_runner(tmp_path, monkeypatch):
    """A job in a docker container: the runner's `docker exec` (workdir, HOME), cancel's
    kill inside the container, and `down`'s kill and rm, on a local directory node."""
    bin_dir, log = _runtime(tmp_path, "docker")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    node = local_nodes(tmp_path, 1)[0]
    root = str(Path(node.root or "").resolve())
    runner = open_runner(node)
    node_jobs.prepare_node(runner)
    Path(root, "skyform_workdir").mkdir()
    env = render_env_file({"GREETING": "hi"})
    box = "docker skyform-c1"
    node_jobs.launch(
        runner, "c1-1", env_file=env, script='echo "$GREETING from $PWD"', cwd="skyform_workdir",
        container=box,
    )  # fmt: skip
    done = node_jobs.wait(runner, "c1-1", 30)
    assert done.state is NodeJobState.SUCCEEDED, done
    _, out, _ = node_jobs.read_log(runner, "c1-1", 0, 10_000)
    assert out.decode() == f"hi from {root}/skyform_workdir\n"
    calls = [shlex.split(c) for c in log.read_text().splitlines()]
    assert calls[-1][:8] == [
        "docker", "exec", "-w", f"{root}/skyform_workdir", "-e", f"HOME={root}", "skyform-c1",
        "/bin/bash",
    ]  # fmt: skip

    node_jobs.launch(runner, "c1-2", env_file=env, script="sleep 30", container=box)
    recorded = Path(root, ".skyform_node/jobs/c1-2/inner")
    deadline = time.monotonic() + 30  # until the job's group inside the "container" is known
    while time.monotonic() < deadline and not (recorded.exists() and recorded.read_text().strip()):
        time.sleep(0.05)
    cancelled = node_jobs.cancel(runner, "c1-2", 2)
    assert cancelled.state is NodeJobState.CANCELLED, cancelled
    inner = recorded.read_text().strip()
    calls = [shlex.split(c) for c in log.read_text().splitlines()]
    assert [  # its process group, signalled inside the container
        "docker", "exec", "skyform-c1", "/bin/bash", "-c", 'kill -"$1" -- "-$2"', "-",
        "TERM", inner,
    ] in calls  # fmt: skip

    Path(root, ".skyform_node/container").write_text(f"{box}\n")
    runner.close()
    teardown_node(node)
    assert log.read_text().splitlines()[-2:] == [
        "docker kill skyform-c1",
        "docker rm -f skyform-c1",
    ]
