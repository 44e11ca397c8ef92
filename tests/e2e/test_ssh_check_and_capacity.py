"""ssh pools on real sshd nodes: `skyform check` logs in and probes hosts that declare no size
(the plan uses and records what it measured); plans count hosts other clusters hold and
refuse, when they are made, what cannot fit at once (never a half-applied plan)."""

from __future__ import annotations

import json
import os
import stat

import pytest
import yaml
from e2ekit import task_file, write_pool

pytestmark = pytest.mark.e2e

CPU_TASK = "name: {name}\nresources:\n  infra: ssh/lab\n  cpus: 1+\nrun: echo on $(hostname)\n"


def _mem_gib() -> float:
    with open("/proc/meminfo") as fh:
        kib = next(int(line.split()[1]) for line in fh if line.startswith("MemTotal:"))
    return round(kib / 2**20, 1)


def undeclared_pool(home, nodes, *, extra=()) -> None:
    """Pool `lab` of session nodes 0 and 1 that declare nothing about their size."""
    hosts = [
        {"host": h.host, "port": h.port, "user": h.user, "identity_file": h.identity_file}
        for h in (nodes.handle(0), nodes.handle(1))
    ]
    (home / "config.yaml").write_text(
        yaml.safe_dump({"ssh_pools": {"lab": {"hosts": hosts + list(extra)}}})
    )


def test_check_logs_in_and_says_why_a_host_cannot(sky, skyform_home, fresh_ssh_nodes):
    nodes = fresh_ssh_nodes
    wrong = nodes.handle(2)
    closed = {"host": "127.0.0.1", "port": 1, "user": "nobody", "identity_file": str(nodes.key)}
    undeclared_pool(
        skyform_home,
        nodes,
        extra=[
            {"host": wrong.host, "port": wrong.port, "user": wrong.user,
             "identity_file": str(nodes.wrong_key)},
            closed,
        ],
    )  # fmt: skip
    report = {r["name"]: r for r in json.loads(sky("check", "--json", check=0).stdout)}
    lab = report["ssh/lab"]
    assert lab["usable"] is True and lab["detail"] == "2/4 hosts log in"
    ok, rejected, refused = lab["items"][0], lab["items"][2], lab["items"][3]
    assert ok.startswith(f"✔ {nodes.handle(0).user}@") and "logged in (host key ssh-ed25519" in ok
    assert "kex curve25519-sha256" in ok
    assert f"probed: {os.cpu_count()} vCPUs, {_mem_gib():g} GiB, x86_64, no GPU" in ok
    assert rejected.startswith("✘") and "rejected the key" in rejected
    assert refused.startswith("✘") and "connection refused" in refused
    text = sky("check", check=0).stdout
    assert "✘ ssh/lab" not in text and "rejected the key" in text
    cache = skyform_home / "ssh_hosts.json"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    hosts = json.loads(cache.read_text())["hosts"]
    probed = hosts[f"ssh/lab/{nodes.handle(0).host}:{nodes.handle(0).port}"]
    assert probed["cpus"] == os.cpu_count() and probed["probed_at"].endswith("Z")


def test_a_pool_that_declares_no_size_is_planned_from_the_probe(
    sky, skyform_home, fresh_ssh_nodes, tmp_path
):
    undeclared_pool(skyform_home, fresh_ssh_nodes)
    task = task_file(tmp_path, "t.yaml", CPU_TASK.format(name="probed"))
    before = sky("plan", task)
    assert before.exit_code == 4
    assert "declare no cpus/memory and have not been probed" in before.stderr
    assert "run `skyform check`" in before.stderr and "cpus: 16, memory: 64" in before.stderr
    sky("check", check=0)
    plan = sky("plan", task, "-o", "p.json", check=0)
    assert "ssh hosts sized by `skyform check`" in plan.stdout
    saved = json.loads((tmp_path / "p.json").read_text())
    assert saved["tasks"][0]["offer"]["vcpus"] == os.cpu_count()
    assert {p["host"].split("/")[1] for p in saved["host_probes"]} == {"lab"}
    applied = sky("apply", "p.json", check=0)  # the engine groups hosts the same way
    assert "Apply complete! Clusters: 1 added" in applied.stdout
    sky("down", "-y", "probed", check=0)


def test_plans_count_hosts_other_clusters_hold(sky, skyform_home, fresh_ssh_nodes, tmp_path):
    write_pool(skyform_home, fresh_ssh_nodes, [0, 1])
    first = task_file(tmp_path, "a.yaml", CPU_TASK.format(name="first"))
    sky("apply", first, "-y", check=0)
    two = task_file(tmp_path, "b.yaml", CPU_TASK.format(name="second") + "num_nodes: 2\n")
    refused = sky("plan", two)
    assert refused.exit_code == 4
    assert "ssh hosts held by other clusters (first) are not offered" in refused.stderr
    docs = ["name: trio\n"] + [CPU_TASK.format(name=n) for n in ("x", "y")]
    pipeline = task_file(tmp_path, "trio.yaml", "---\n".join(docs))
    too_many = sky("plan", pipeline)
    assert too_many.exit_code == 4
    assert "tasks x, y need 2 hosts of 2CPU--4GB (ssh/lab) at once, but 1 of 2 are free" in (
        too_many.stderr
    )
    assert "held by first" in too_many.stderr
    assert set(c["name"] for c in json.loads(sky("status", "--json").stdout)) == {"first"}
    sky("down", "-y", "first", check=0)
    assert sky("plan", pipeline).exit_code == 0
