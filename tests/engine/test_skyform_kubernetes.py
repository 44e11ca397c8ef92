"""skyform on Kubernetes through the real engine, as a user drives it: `plan` reads the
nodes from the API server, `launch` makes the cluster's stack (a Secret, a Pod and a NodePort
Service per node) with the real Pulumi CLI and Kubernetes provider, reaches the pods by SSH,
syncs the workdir and runs setup and the job; the cluster verbs work on it; `down` destroys
the stack and the API server holds nothing of the cluster."""

from __future__ import annotations

import json
import time

import pytest
from helpers import wait_until
from kubecluster.skyuser import nothing_of

pytestmark = pytest.mark.engine

TWO_T4_PODS = """\
name: {name}
num_nodes: 2
resources: {{infra: k8s, accelerators: T4:1}}
workdir: .
setup: echo setup-ran-on-$(hostname) > ~/setup-marker
run: |
  echo "job-start $(date +%s.%N)"
  echo "rank $SKYPILOT_NODE_RANK of $SKYPILOT_NUM_NODES on $(hostname): $(cat data.txt)"
"""
T4_NODES = {"gke-train-t4-pool-3f9c2a1b-xk2p", "gke-train-t4-pool-3f9c2a1b-m7qd"}


def test_launch_the_cluster_verbs_and_down(kube_user):
    user, name = kube_user, "k8s-verbs"
    user.task("task.yaml", TWO_T4_PODS.format(name=name))
    (user.cwd / "data.txt").write_text("from-the-workdir\n")

    planned = user.sky("plan", "task.yaml", "-o", "plan.json").stdout
    # The capacity is the API server's: the recorded GKE and EKS nodes the cluster registered.
    assert "Kubernetes: planned on skyform-test (12 nodes: " in planned
    assert "2× (7.91 CPU, 24.81 GiB, 1× T4)" in planned
    assert '+ infra          = "kubernetes/skyform-test"' in planned
    assert (user.home / "kubernetes" / "nodes.json").is_file()

    began = time.time()
    launched = user.sky("launch", "task.yaml", "-y")
    out = launched.stdout
    for rank in (0, 1):
        assert f"rank {rank} of 2 on {name}-{rank}: from-the-workdir" in out
    starts = [float(line.split()[-1]) for line in out.splitlines() if ") job-start " in line]
    assert len(starts) == 2, out
    print(f"launch -> job running on Kubernetes: {min(starts) - began:.1f} s")
    assert f"{name}: job 1 SUCCEEDED" in out
    # The engine's routine notice of a plugin found on PATH is not passed on; with the SDK of
    # the provider's version (the dev extra's pin) there is no warning at all.
    assert "warning" not in launched.output.lower()

    assert user.objects(name) == {
        "pods": [f"{name}-0", f"{name}-1"],
        "services": [f"{name}-0-ssh", f"{name}-1-ssh"],
        "secrets": [f"{name}-ssh"],
        "endpoints": [f"{name}-0-ssh", f"{name}-1-ssh"],
    }
    pods = user.cluster.rest.get("/api/v1/namespaces/default/pods")["items"]
    assert {p["spec"]["nodeName"] for p in pods} == T4_NODES
    status = json.loads(user.sky("status", "--json").stdout)
    assert [(c["name"], c["status"], c["engine"], c["stack"]) for c in status] == [
        (name, "UP", "pulumi", f"skyform/{name}")
    ]

    queue = json.loads(user.sky("queue", name, "--json").stdout)
    assert [(j["job_id"], j["status"]) for j in queue] == [(1, "SUCCEEDED")]
    logs = user.sky("logs", name, "1").stdout
    assert f"(k8s-verbs, node=1) rank 1 of 2 on {name}-1: from-the-workdir" in logs
    executed = user.sky(  # a command is a 1-node task, as in `sky exec`: both nodes asked
        "exec", name, "--num-nodes", "2", "cat ~/setup-marker ~/skyform_workdir/data.txt"
    ).stdout
    for rank in (0, 1):
        assert f"(k8s-verbs, node={rank}) setup-ran-on-{name}-{rank}" in executed
    assert executed.count("from-the-workdir") == 2
    assert user.sky("ssh", name, "--", "hostname").stdout.strip() == f"{name}-0"
    assert user.sky("ssh", "-n", "1", name, "--", "hostname").stdout.strip() == f"{name}-1"
    shell = user.sky("ssh", name, stdin="echo shell-on-$(hostname)\nexit 3\n", check=3)
    assert f"shell-on-{name}-0" in shell.stdout

    down = user.sky("down", "-y", name)
    assert f"removed stack skyform/{name}" in down.stdout
    wait_until(lambda: nothing_of(user, name), 15)  # the Endpoints follow their Service
    assert json.loads(user.sky("status", "--json").stdout) == []
    assert not (user.home / "pulumi" / ".pulumi" / "stacks" / "skyform" / f"{name}.json").exists()
    assert user.cluster.agent.errors == []


TWO_PODS = """\
name: {name}
num_nodes: 2
resources: {{infra: k8s, cpus: 1, memory: 2}}
run: echo "rank $SKYPILOT_NODE_RANK on $(hostname)"
"""


def test_a_pod_deleted_out_of_band_shows_in_status_and_the_next_plan(kube_user):
    user, name = kube_user, "k8s-drift"
    user.task("task.yaml", TWO_PODS.format(name=name))
    user.sky("launch", "task.yaml", "-y")
    assert "No changes." in user.sky("plan", "task.yaml").stdout

    rest = user.cluster.rest
    rest.delete(f"/api/v1/namespaces/default/pods/{name}-1")  # kubectl delete pod
    wait_until(lambda: user.objects(name)["pods"] == [f"{name}-0"], 15)

    refreshed = user.sky("status", "--refresh").stdout
    assert f"{name}" in refreshed and "(node 1 lost)" in refreshed
    # What the refresh found stays recorded: a plain status and the next plan know it.
    status = json.loads(user.sky("status", "--json").stdout)
    assert [(c["name"], c["status"]) for c in status] == [(name, "LOST")]
    planned = user.sky("plan", "task.yaml", "-o", "plan.json").stdout
    assert "No changes" not in planned
    assert f'-/+ cluster "{name}"' in planned
    assert "its nodes were lost (preempted or dead): the cluster is rebuilt" in planned
    assert "Plan: 1 to add, 0 to change, 1 to destroy." in planned
    # launch never replaces a cluster it was not told to
    refused = user.sky("launch", "task.yaml", "-y", check=1)
    assert f"--replace {name}" in refused.stderr

    applied = user.sky("apply", "plan.json").stdout
    assert f"rank 1 on {name}-1" in applied
    assert user.objects(name)["pods"] == [f"{name}-0", f"{name}-1"]
    status = json.loads(user.sky("status", "--json").stdout)
    assert [(c["name"], c["status"]) for c in status] == [(name, "UP")]
    user.sky("down", "-y", name)
    wait_until(lambda: nothing_of(user, name), 15)


def test_a_pod_stuck_terminating_is_lost_too(kube_user):
    """A deleted pod the API keeps (a finalizer holds it, as a lost node's pods are kept):
    it reads Running, with a deletionTimestamp, and its processes have ended. It is lost
    as a pod that is gone is; once the API lets it go, apply rebuilds the cluster."""
    user, name = kube_user, "k8s-terminating"
    user.task("task.yaml", TWO_PODS.format(name=name).replace("num_nodes: 2", "num_nodes: 1"))
    user.sky("launch", "task.yaml", "-y")
    rest, path = user.cluster.rest, f"/api/v1/namespaces/default/pods/{name}-0"
    rest.merge_patch(path, {"metadata": {"finalizers": ["example.com/hold"]}})
    try:
        rest.delete(path)  # kubectl delete pod: Terminating until the finalizer is lifted
        wait_until(lambda: user.cluster.agent.running_pod("default", f"{name}-0") is None, 15)
        pod = rest.get(path)
        assert pod["metadata"]["deletionTimestamp"] and pod["status"]["phase"] == "Running"

        assert "(node 0 lost)" in user.sky("status", "--refresh").stdout
        status = json.loads(user.sky("status", "--json").stdout)
        assert [(c["name"], c["status"]) for c in status] == [(name, "LOST")]
        planned = user.sky("plan", "task.yaml", "-o", "plan.json").stdout
        assert f'-/+ cluster "{name}"' in planned
    finally:  # the API lets it go (else nothing could take the cluster down)
        rest.merge_patch(path, {"metadata": {"finalizers": None}})
    assert f"rank 0 on {name}-0" in user.sky("apply", "plan.json").stdout
    user.sky("down", "-y", name)
    wait_until(lambda: nothing_of(user, name), 15)


def test_autostop_down_tears_the_stack_down(kube_user):
    """The agent on the head pod decides (idle for a minute after the job), leaves its
    `down` marker; the next `status --refresh` finishes it as `down` would: the stack is
    destroyed and the API server holds nothing of the cluster."""
    user, name = kube_user, "k8s-idle"
    (user.home / "config.yaml").write_text("autostop: {check_interval: 2}\n")
    user.task("task.yaml", TWO_PODS.format(name=name))
    user.sky("launch", "task.yaml", "-y", "--down", "-i", "1")
    ended = max(j["ended_at"] for j in json.loads(user.sky("queue", name, "--json").stdout))
    status = json.loads(user.sky("status", "--json").stdout)
    assert [(c["name"], c["autostop"]["down_after"]) for c in status] == [(name, 1)]

    notes = []
    deadline = time.time() + 150
    while time.time() < deadline:
        refreshed = user.sky("status", "--refresh").stdout
        if name not in refreshed.replace(f"{name}: torn down", ""):
            notes.append(refreshed)
            break
        time.sleep(3)
    gone_at = time.time()
    assert notes and f"{name}: torn down by autostop (idle for 1 min)" in notes[0], notes
    print(f"autostop --down on Kubernetes: gone {gone_at - ended:.1f} s after the job ended")
    assert 60 <= gone_at - ended < 100
    wait_until(lambda: nothing_of(user, name), 15)
    assert not (user.home / "pulumi" / ".pulumi" / "stacks" / "skyform" / f"{name}.json").exists()
