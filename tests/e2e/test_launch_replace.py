"""`launch` and `apply TASK` never destroy a cluster unless asked out loud: a changed resource
that forces a replacement (`--num-nodes 2` on a 1-node cluster) is refused with the reason and
what to do, and the files on the cluster stay. `--replace CLUSTER` lets it happen, after a
question of its own on a terminal that `-y` does not answer (`-y` approves a plan, never a
replacement). As SkyPilot's `sky launch`, which refuses resources a cluster does not have."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

KEEP = "name: keep\nresources: {infra: local}\nrun: echo nodes=$SKYFORM_NUM_NODES\n"


def _nodes(sky) -> list[int]:
    return [len(c["nodes"]) for c in json.loads(sky("status", "--json", check=0).stdout)]


def _precious(sky) -> str:
    return sky("exec", "keep", "cat ~/precious 2>/dev/null || echo gone", check=0).stdout


def _on_a_terminal(skyform_home, cwd, answer: str, *args) -> subprocess.CompletedProcess[str]:
    """`skyform ARGS` with a terminal for stdin, `answer` typed at its question."""
    parent, child = pty.openpty()
    try:
        os.write(parent, answer.encode() + b"\n")
        env = dict(os.environ, SKYFORM_HOME=str(skyform_home), COLUMNS="200", NO_COLOR="1")
        return subprocess.run(
            [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
            stdin=child,
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=120,
        )
    finally:
        os.close(parent)
        os.close(child)


def test_a_replacement_is_refused_unless_asked_for_and_then_confirmed_on_its_own(
    sky, skyform_home, tmp_path
):
    task = task_file(tmp_path, "keep.yaml", KEEP)
    sky("launch", task, "-y", check=0)
    sky("exec", "keep", "echo data > ~/precious", check=0)

    for verb in ("launch", "apply"):
        refused = sky(verb, task, "-y", "--num-nodes", "2")
        assert refused.exit_code == 1, refused.output
        error = refused.stderr
        assert f"{verb} would destroy cluster keep and make it again" in error
        assert "num_nodes 1 → 2 forces replacement" in error
        assert "everything on its nodes is lost" in error
        assert "--replace keep" in error and "skyform down keep" in error
        assert "-c NEW_NAME" in error
        assert "Traceback" not in refused.output
    assert _nodes(sky) == [1]
    assert "data" in _precious(sky)  # nothing was touched

    flags = ("launch", task, "-y", "--num-nodes", "2", "--replace", "keep")
    kept = _on_a_terminal(skyform_home, tmp_path, "no", *flags)
    assert kept.returncode == 1, kept.stdout + kept.stderr
    assert "Destroy cluster keep and make it again" in kept.stdout  # -y did not answer it
    assert "Cancelled: nothing was changed." in kept.stdout
    assert _nodes(sky) == [1] and "data" in _precious(sky)

    replaced = _on_a_terminal(skyform_home, tmp_path, "yes", *flags)
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    assert "Destroy cluster keep and make it again" in replaced.stdout
    assert "nodes=2" in replaced.stdout
    assert _nodes(sky) == [2]
    assert "gone" in _precious(sky)  # what replacing means, and why it is asked


def test_in_a_script_replace_names_the_cluster_and_y_approves_the_plan(sky, tmp_path):
    task = task_file(tmp_path, "keep.yaml", KEEP)
    sky("launch", task, "-y", check=0)
    unasked = sky("launch", task, "--num-nodes", "2", "--replace", "keep")
    assert unasked.exit_code == 1 and "needs confirmation" in unasked.stderr  # the plan's
    other = sky("launch", task, "-y", "--num-nodes", "2", "--replace", "other")
    assert other.exit_code == 1 and "--replace keep" in other.stderr  # another name: refused
    assert _nodes(sky) == [1]
    sky("apply", task, "-y", "--num-nodes", "2", "--replace", "keep", check=0)
    assert _nodes(sky) == [2]
