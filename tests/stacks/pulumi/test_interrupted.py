"""What a killed Pulumi run leaves (its lock, its pending creates) and how skyform tells and
settles it (skyform/stacks/pulumi/interrupted.py); through the real engine in
tests/engine/test_skyform_kubernetes_faults.py."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

from skyform.stacks.pulumi.interrupted import (
    LockHolder,
    adopt_pending_creates,
    holder_gone,
    lock_holders,
    stale,
)
from skyform.stacks.pulumi.kubernetes import CLOUD

TWO_LOCKS = """error: the stack is currently locked by 2 lock(s). Either wait for the other \
process(es) to end or delete the lock file with `pulumi cancel`.
  file:///h/.pulumi/locks/organization/skyform/c1/a.json: created by root@vm (pid 9211) at \
2026-12-04T21:10:45Z
  postgres://****:****@db:5432/skyform/.pulumi/locks/organization/skyform/c1/b.json: created \
by ci-runner@ci-host-7 (pid 31) at 2026-12-04T21:11:02.5Z
"""


def test_the_holders_the_engine_names():
    assert lock_holders(TWO_LOCKS) == [
        LockHolder("root", "vm", 9211, "2026-12-04T21:10:45Z"),
        LockHolder("ci-runner", "ci-host-7", 31, "2026-12-04T21:11:02.5Z"),
    ]
    assert lock_holders("error: [409] Conflict: Another update is currently in progress.") == []


def test_a_holder_of_this_machine_is_gone_when_its_process_is():
    here = socket.gethostname()
    ended = subprocess.Popen(["true"])
    ended.wait()  # reaped: its pid runs nothing now
    assert holder_gone(LockHolder("u", here, ended.pid, "t"))
    # a live process that is not pulumi: the holder's pid was reused by another program
    assert holder_gone(LockHolder("u", here, os.getpid(), "t"))
    # another machine's holder is never taken for gone, whatever its pid here
    assert not holder_gone(LockHolder("u", "another-host", ended.pid, "t"))


def test_a_killed_holder_not_yet_reaped_is_gone(tmp_path):
    pulumi = tmp_path / "pulumi"  # a process whose executable is named pulumi
    shutil.copy("/bin/sleep", pulumi)
    alive = subprocess.Popen([str(pulumi), "60"])
    holder = LockHolder("u", socket.gethostname(), alive.pid, "t")
    try:
        assert not holder_gone(holder)
        assert not stale([holder])
        alive.kill()
        os.waitid(os.P_PID, alive.pid, os.WEXITED | os.WNOWAIT)  # a zombie: dead, not reaped
        assert holder_gone(holder)
    finally:
        alive.kill()
        alive.wait()
    assert not stale([])  # no holder named: nothing to release


def _pending(kind: str, name: str, op: str = "creating") -> dict:
    urn = f"urn:pulumi:c1::skyform::kubernetes:core/v1:{kind}::{name}"
    inputs = {"metadata": {"name": f"c1-{name}", "namespace": "default"}}
    return {
        "type": op,
        "resource": {"urn": urn, "custom": True, "type": f"kubernetes:core/v1:{kind}",
                     "inputs": inputs, "provider": "urn:...::kubernetes::uuid"},
    }  # fmt: skip


def test_pending_creates_the_cloud_can_name_are_recorded_as_made():
    deployment = {
        "resources": [{"urn": "stack"}],
        "pending_operations": [
            _pending("Service", "ssh-0"),
            _pending("Pod", "node-1", op="deleting"),  # not a create: the engine's to settle
        ],
    }
    adopted = adopt_pending_creates(deployment, CLOUD.object_id)
    assert adopted == ["ssh-0 (kubernetes:core/v1:Service)"]
    made = deployment["resources"][1]
    assert made["id"] == "default/c1-ssh-0" and made["outputs"] == made["inputs"]
    assert [p["type"] for p in deployment["pending_operations"]] == ["deleting"]


def test_pending_creates_of_a_cloud_that_cannot_name_them_are_left():
    deployment = {"resources": [], "pending_operations": [_pending("Service", "ssh-0")]}
    assert adopt_pending_creates(deployment, lambda resource: None) == []
    assert deployment == {"resources": [], "pending_operations": [_pending("Service", "ssh-0")]}
