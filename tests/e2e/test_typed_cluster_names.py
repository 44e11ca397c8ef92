"""A cluster launched as `-c Cuda_11.8` (a name SkyPilot takes) is shown so and answers to it in
every verb, while its node directories, lock and state key are `cuda-11-8`'s (issue 28)."""

from __future__ import annotations

import json

import pytest
from e2ekit import task_file, write_pool

pytestmark = pytest.mark.e2e


def test_verbs_take_the_name_as_typed_on_local(sky, skyform_home, tmp_path):
    task = task_file(
        tmp_path, "t.yaml", "resources: {infra: local}\nrun: echo from-$SKYPILOT_NODE_RANK\n"
    )
    sky("launch", task, "-c", "Cuda_11.8", "-y", check=0)
    table = sky("status", check=0).stdout
    assert "Cuda_11.8" in table and "cuda-11-8" not in table  # shown as typed
    (record,) = json.loads(sky("status", "--json", check=0).stdout)
    assert (record["name"], record["shown_as"]) == ("cuda-11-8", "Cuda_11.8")
    assert (skyform_home / "local" / "cuda-11-8").is_dir()  # paths use the engine name
    assert not list(skyform_home.rglob("Cuda_11.8*"))
    assert "from-0" in sky("exec", "Cuda_11.8", "echo", "from-$SKYPILOT_NODE_RANK", check=0).stdout
    assert "from-0" in sky("logs", "Cuda_11.8", "1", check=0).stdout
    assert "SUCCEEDED" in sky("queue", "Cuda_11.8", check=0).stdout
    assert sky("ssh", "Cuda_11.8", "--", "true").exit_code == 0
    assert sky("status", "--ip", "Cuda_11.8", check=0).stdout.strip() == "127.0.0.1"
    again = sky("launch", task, "-c", "Cuda_11.8", "-y", check=0).stdout
    assert "0 added, 0 changed, 0 destroyed" in again  # the same cluster, its job run again
    sky("down", "-y", "Cuda_11.8", check=0)
    assert json.loads(sky("status", "--json", check=0).stdout) == []


def test_a_typed_name_on_sshd_nodes(sky, skyform_home, fresh_ssh_nodes, tmp_path):
    write_pool(skyform_home, fresh_ssh_nodes, [0, 1])
    task = task_file(
        tmp_path, "p.yaml", "num_nodes: 2\nresources: {infra: ssh/lab}\nrun: echo up\n"
    )
    sky("launch", task, "-c", "my_cluster", "-y", check=0)
    assert "my_cluster" in sky("status", check=0).stdout
    ran = sky("exec", "my_cluster", "--num-nodes", "2", "echo $SKYPILOT_CLUSTER_INFO", check=0)
    assert ran.stdout.count('"cluster_name": "my-cluster"') == 2  # the engines' name
    for i in range(2):  # the hosts' job files are under the engine name
        jobs = fresh_ssh_nodes.in_node(
            i, "ls", f"{fresh_ssh_nodes.nodes[i].home}/.skyform_node/jobs"
        )
        assert "my-cluster-2" in jobs.stdout.split()
    sky("down", "-y", "my_cluster", check=0)


def test_every_message_shows_the_name_as_typed_on_local(sky, tmp_path):
    """Progress lines, the launch summary, `queue`'s heading and LOG column, `logs`, `exec`,
    a verb's error and `down` all say `Cuda_11.8`, never the engines' `cuda-11-8` (only the
    plan names both, on purpose)."""
    task = task_file(tmp_path, "t.yaml", "resources: {infra: local}\nrun: echo hi\n")
    launched = sky("launch", task, "-c", "Cuda_11.8", "-y", check=0).stdout
    said = [launched.split("Plan digest:", 1)[1]]
    sky("launch", task, "-c", "other", "-y", check=0)  # `queue` heads each cluster's table
    said.append(sky("queue", check=0).stdout)
    said.append(sky("exec", "Cuda_11.8", "echo", "x", check=0).stdout)
    said.append(sky("logs", "--no-follow", "cuda-11-8", "1", check=0).stdout)
    unknown = sky("logs", "Cuda_11.8", "9")
    said.append(unknown.stdout + unknown.stderr)
    said.append(sky("down", "-y", "Cuda_11.8", check=0).stdout)
    sky("down", "-y", "other", check=0)
    text = "\n".join(said).replace("/local/cuda-11-8", "")  # its node directory: a path
    assert "cuda-11-8" not in text
    assert "(Cuda_11.8, node=0) hi" in said[0] and "Cuda_11.8: job 1 SUCCEEDED" in said[0]
    assert "Job queue of cluster Cuda_11.8" in said[1]
    assert "skyform logs Cuda_11.8 1" in said[1]
    assert "── job 2 on Cuda_11.8: SUCCEEDED" in said[2]
    assert "── job 1 on Cuda_11.8: SUCCEEDED" in said[3]
    assert "cluster 'Cuda_11.8' has no job 9" in said[4]
    assert "Cuda_11.8 destroying" in said[5]
