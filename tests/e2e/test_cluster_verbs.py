"""The cluster verbs with SkyPilot's habits, on `local` and on real sshd nodes: `logs` exit
codes, `exec C CMD ARGS...`, `queue` of every cluster, `status -a`, `down -a`,
`ssh CLUSTER`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from e2ekit import task_file, write_pool

pytestmark = pytest.mark.e2e


def _local(tmp_path: Path, name: str, run: str = "echo hi", nodes: int = 1) -> Path:
    return task_file(
        tmp_path, f"{name}.yaml", f"name: {name}\nnum_nodes: {nodes}\nresources: {{infra: local}}\n"
        f"run: {run}\n",
    )  # fmt: skip


def _jobs(sky, cluster: str) -> list[dict]:
    return json.loads(sky("queue", cluster, "--json", check=0).stdout)


def test_logs_exits_with_the_jobs_outcome(sky, tmp_path):
    sky("launch", _local(tmp_path, "c"), "-y", check=0)  # job 1 succeeds
    assert sky("logs", "c", "1").exit_code == 0
    assert sky("logs", "c", "1", "-f").exit_code == 0
    sky("exec", "c", "--detach", "exit 3", check=0)  # job 2 fails
    assert sky("logs", "c", "2", "-f").exit_code == 100
    assert sky("logs", "c", "2").exit_code == 100
    sky("exec", "c", "-d", "sleep 30", check=0)  # job 3 runs
    assert sky("logs", "c", "3", "--no-follow").exit_code == 101  # not finished
    status = sky("logs", "c", "--status")  # `sky logs --status`: the latest job's, no log
    assert (status.exit_code, status.stdout.strip()) == (101, "Job 3: RUNNING")
    assert sky("logs", "c", "2", "--status").stdout.strip() == "Job 2: FAILED"
    sky("cancel", "c", "3", check=0)
    assert sky("logs", "c", "3", "-f").exit_code == 103
    missing = sky("logs", "c", "99")
    assert missing.exit_code == 102 and "has no job 99" in missing.stderr
    assert sky("logs", "nosuch").exit_code == 1  # no such cluster: an ordinary error


def test_exec_takes_the_command_unquoted(sky, tmp_path):
    sky("launch", _local(tmp_path, "c"), "-y", check=0)
    words = sky("exec", "c", "printf", "%s,", "--lr", "1e-3", "a b", check=0)
    assert "(c, node=0) --lr,1e-3,a,b," in words.stdout  # joined by spaces, as ssh does
    dashed = sky("exec", "c", "--", "echo", "-d", check=0)
    assert "(c, node=0) -d" in dashed.stdout  # after `--`, -d is the command's, not --detach
    assert sky("exec", "c", "exit", "7").exit_code == 7
    assert [j["status"] for j in _jobs(sky, "c")][-1] == "FAILED"


def test_exec_resource_flags_are_the_jobs_demand(sky, tmp_path):
    sky("launch", _local(tmp_path, "c"), "-y", check=0)
    before = len(_jobs(sky, "c"))
    refused = sky("exec", "c", "--gpus", "A100:1", "--infra", "aws", "echo", "hi")
    assert refused.exit_code == 1
    assert "does not have what the flags ask: --gpus A100:1: the cluster has no accelerators" in (
        refused.stderr
    )
    assert "cloud aws: the cluster is on local" in refused.stderr
    assert len(_jobs(sky, "c")) == before  # nothing ran
    ignored = sky("exec", "c", "--cpus", "64", "--infra", "local", "echo", "fits", check=0)
    assert "--cpus is ignored by exec" in ignored.stderr and "(c, node=0) fits" in ignored.stdout
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "train.py").write_text("print('trained')\n")
    synced = sky("exec", "c", "--workdir", "code", sys.executable, "train.py", check=0)
    assert "(c, node=0) trained" in synced.stdout


def test_queue_without_a_cluster_shows_every_cluster(sky, tmp_path):
    sky("launch", _local(tmp_path, "one"), "-y", check=0)
    sky("launch", _local(tmp_path, "two", run="exit 1"), "-y")
    text = sky("queue", check=0).stdout
    assert "Job queue of cluster one" in text and "Job queue of cluster two" in text
    jobs = json.loads(sky("queue", "--json", check=0).stdout)
    assert [(j["cluster"], j["status"]) for j in jobs] == [("one", "SUCCEEDED"), ("two", "FAILED")]
    assert "one" in sky("status", "-a", check=0).stdout


def test_down_all_takes_every_cluster_but_a_managed_jobs(sky, skyform_home, tmp_path):
    (skyform_home / "config.yaml").write_text("recovery: {check_interval: 0.5}\n")
    sky("launch", _local(tmp_path, "one"), "-y", check=0)
    sky("launch", _local(tmp_path, "two"), "-y", check=0)
    sky("jobs", "launch", _local(tmp_path, "long", run="sleep 60"), "-y", "-d", check=0)
    for _ in range(100):
        if any(c["name"] == "j1-long" for c in json.loads(sky("status", "--json", check=0).stdout)):
            break
        time.sleep(0.2)
    down = sky("down", "-a", "-y", check=0)
    assert "one down: terminated" in down.stdout and "two down: terminated" in down.stdout
    assert "cluster 'j1-long' runs managed job 1" in down.stderr
    assert "skyform jobs cancel 1" in down.stderr
    assert [c["name"] for c in json.loads(sky("status", "--json", check=0).stdout)] == ["j1-long"]
    sky("jobs", "cancel", "1", "-y", check=0)
    assert sky("down", "-a", "-y", check=0).stdout.strip() == "No clusters to tear down."
    nothing = sky("down")
    assert nothing.exit_code == 1 and "say which clusters to tear down" in nothing.stderr


def test_ssh_on_a_local_cluster(sky, tmp_path):
    sky("launch", _local(tmp_path, "c", nodes=2), "-y", check=0)
    (node,) = [n for n in json.loads(sky("status", "--json", check=0).stdout)[0]["nodes"]
               if n["rank"] == 1]  # fmt: skip
    one = sky("ssh", "c", "--node", "1", "--", "pwd", check=0)
    assert one.stdout.strip() == node["root"]
    assert sky("ssh", "c", "--", "exit", "9").exit_code == 9
    missing = sky("ssh", "c", "--node", "5")
    assert missing.exit_code == 1 and "has nodes 0..1, not 5" in missing.stderr


def test_ssh_on_sshd_nodes(sky, skyform_home, fresh_ssh_nodes, tmp_path):
    nodes = fresh_ssh_nodes
    write_pool(skyform_home, nodes, [0, 1])
    task = task_file(
        tmp_path, "p.yaml", "name: p\nnum_nodes: 2\nresources: {infra: ssh/lab}\nrun: echo\n"
    )
    sky("launch", task, "-y", check=0)
    ranks = {n["rank"]: n for n in json.loads(sky("status", "--json", check=0).stdout)[0]["nodes"]}
    who = sky("ssh", "p", "--", "whoami", check=0)
    assert who.stdout.strip() == ranks[0]["user"]
    other = sky("ssh", "p", "--node", "1", "--", "echo", "$USER", check=0)
    assert other.stdout.strip() == ranks[1]["user"]
    assert sky("ssh", "p", "--", "exit 4").exit_code == 4
    shell = sky("ssh", "p", stdin="echo in-the-shell; exit 6\n")
    assert (shell.exit_code, shell.stdout.strip()) == (6, "in-the-shell")
    sky("down", "-y", "p", check=0)
