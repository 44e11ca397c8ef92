"""A managed job on Kubernetes through the real engine, recovered after its pod is deleted
out of band (`kubectl delete pod`: an eviction, a drained node): the controller notices,
saves a new plan revision, the real Pulumi CLI and Kubernetes provider destroy the broken
stack and make a new one, and the job resumes from the checkpoint it keeps where a SkyPilot
user keeps one: a bucket MOUNTed on the pod (moto's S3 API where the pod network reaches
it; rclone over FUSE in the pod). The recovery is timed; at the end the API server holds
nothing of the job's cluster."""

from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest
from helpers import wait_until
from kubecluster.skyuser import nothing_of
from loopback import serve, venv_tool
from motoserver import KEYS, can_fuse

pytestmark = pytest.mark.engine

FINAL = ("SUCCEEDED", "FAILED", "FAILED_SETUP", "FAILED_NO_RESOURCE", "FAILED_CONTROLLER")
BUCKET = "k8s-counter-ckpt"
STEPS = 24

COUNTER = f"""\
name: counter
resources: {{infra: k8s, cpus: 1, memory: 2}}
file_mounts:
  /checkpoint:
    name: {BUCKET}
    store: s3
    mode: MOUNT
run: |
  start=$(cat /checkpoint/n 2>/dev/null || echo 0)
  echo "recovery=$SKYFORM_RECOVERY_COUNT start=$start on $(hostname)"
  for i in $(seq "$start" {STEPS}); do
    echo "step $i at $(date +%s.%N)"; echo "$i" > /checkpoint/n; sleep 0.5
  done
"""


@pytest.fixture
def pod_s3(kube_user, tmp_path):
    """moto's S3 on the pod network's gateway (the pods reach it there, as pods reach S3);
    the user's environment points skyform at it. Yields a boto3 client of it."""
    import boto3

    why = can_fuse()
    if why:
        pytest.skip(f"FUSE cannot mount in the pods: {why}")
    binary = venv_tool("moto_server")
    if binary is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    gateway = kube_user.cluster.network.gateway
    argv = lambda port: [binary, "-H", gateway, "-p", str(port)]  # noqa: E731
    server = serve(argv, "/moto-api/", tmp_path / "moto.log", "moto_server", host=gateway)
    endpoint = next(server)
    kube_user.env.update(KEYS, AWS_ENDPOINT_URL=endpoint)
    keys = {k.lower(): v for k, v in KEYS.items()}
    yield boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **keys)
    # before the store goes: a job left running (a failed test) and its cluster
    kube_user.sky("jobs", "cancel", "-a", "-y", check=None, timeout=300)
    kube_user.sky("down", "-a", "-y", "--purge", check=None, timeout=300)
    next(server, None)


def test_a_deleted_pod_is_recovered_and_the_job_resumes_from_its_bucket(
    kube_user, pod_s3, record_property
):
    user = kube_user
    (user.home / "config.yaml").write_text("recovery: {check_interval: 0.5}\n")
    user.task("counter.yaml", COUNTER)
    user.sky("jobs", "launch", "counter.yaml", "-d", "-y")
    _wait(user, lambda j: j["status"] == "RUNNING" and _step(pod_s3) >= 3, 120, "step 3")
    (pod,) = _pods(user)
    cluster = pod["metadata"]["labels"]["skyform/cluster"]
    stack = user.home / "pulumi" / ".pulumi" / "stacks" / "skyform" / f"{cluster}.json"
    reached = _step(pod_s3)

    deleted_at = time.time()
    user.cluster.rest.delete(f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}")
    job = _wait(user, lambda j: j["status"] in FINAL, 240, "the job's end")
    controller = user.sky("jobs", "logs", "1", "--no-follow", "--controller").stdout
    assert job["status"] == "SUCCEEDED", controller
    assert job["tasks"][0]["recovery_count"] == 1

    # The controller noticed: SSH finds no route to the pod, or the job's end is read with
    # the API's word on the pod (being deleted, or gone); it saved a revision, and the real
    # engine replaced the stack: the broken one destroyed, a new pod made.
    noticed = (
        r"PREEMPTED: (node 0 stopped answering: .*"
        r"|lost node 0 \((the pod is gone|Terminating)\))\n"
    )
    cause = re.search(noticed, controller)
    assert cause, controller
    assert "plan revision 2: " in controller
    assert controller.count(f"removed stack skyform/{cluster}") == 2  # recovery, the end
    assert controller.count("created node-0 (kubernetes:core/v1:Pod)") == 2
    revisions = json.loads(user.sky("jobs", "plans", "1", "--json").stdout)
    assert [r["revision"] for r in revisions] == [1, 2], revisions

    # It resumed from its checkpoint in the bucket, not from zero, and ran to the end once.
    logs = user.sky("jobs", "logs", "1", "--no-follow").stdout
    (resumed,) = re.findall(r"recovery=1 start=(\d+) on ", logs)
    assert int(resumed) >= reached >= 3, logs
    assert logs.count(f"step {STEPS} at ") == 1, logs
    assert _step(pod_s3) == STEPS

    events = _events(user)
    assert (len(events["managed.running"]), len(events["managed.succeeded"])) == (2, 1)
    detected = events["managed.recovering"][0] - deleted_at
    running = events["managed.running"][1] - deleted_at
    stamps = [float(t) for t in re.findall(r"step \d+ at (\S+)", logs)]
    stepping = min(t for t in stamps if t > deleted_at) - deleted_at
    succeeded = events["managed.succeeded"][0] - deleted_at
    for figure, seconds in (
        ("noticed_s", detected),
        ("running_again_s", running),
        ("succeeded_s", succeeded),
    ):
        record_property(figure, round(seconds, 1))
    print(
        f"\nk8s managed job, pod deleted -> noticed {detected:.1f} s ({cause[1]}), running again "
        f"{running:.1f} s (first step on the new pod {stepping:.1f} s), "
        f"SUCCEEDED {succeeded:.1f} s (first launch to first step: "
        f"{min(stamps) - job['submitted_at']:.1f} s)"
    )

    # The controller took the cluster down at the end: the API holds nothing of it.
    wait_until(lambda: nothing_of(user, cluster), 30)
    assert json.loads(user.sky("status", "--json").stdout) == []
    assert not stack.exists()


def _step(s3) -> int:
    """The checkpoint the job keeps in the bucket (0 before its first)."""
    try:
        body = s3.get_object(Bucket=BUCKET, Key="n")["Body"].read().decode()
    except s3.exceptions.ClientError:  # no bucket or no checkpoint yet
        return 0
    return int(body.strip() or 0)


def _job(user) -> dict:
    (job,) = json.loads(user.sky("jobs", "queue", "--json").stdout)
    return job


def _pods(user) -> list[dict]:
    items = user.cluster.rest.get("/api/v1/namespaces/default/pods")["items"]
    return [p for p in items if "skyform/cluster" in (p["metadata"].get("labels") or {})]


def _events(user) -> dict[str, list[float]]:
    """When each status transition of the managed job was recorded, in order."""
    found: dict[str, list[float]] = {}
    with sqlite3.connect(user.home / "state.db") as db:
        rows = db.execute("SELECT kind, ts FROM events WHERE kind LIKE 'managed.%' ORDER BY id")
        for kind, ts in rows:
            found.setdefault(kind, []).append(ts)
    return found


def _wait(user, predicate, timeout: float, what: str) -> dict:
    """The managed job once `predicate(job)` holds; else fail with its and its controller's
    output."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = _job(user)
        if predicate(job):
            return job
        time.sleep(0.2)
    controller = user.sky("jobs", "logs", "1", "--no-follow", "--controller", check=None).output
    output = user.sky("jobs", "logs", "1", "--no-follow", check=None).output
    raise AssertionError(f"{what} not reached in {timeout:g} s: {job}\n{controller}\n{output}")
