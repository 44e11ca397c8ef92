"""Team mode through the real engine: two users (two SKYFORM_HOMEs, one kubeconfig) share one
real PostgreSQL as their state store. The laptop `launch`es a Kubernetes task; its stack is
made by the real Pulumi CLI in the `postgres://` DIY backend on that database (its
`pulumi_state` table), not in a file backend of either home. CI sees the cluster in `status`,
reads its job's `logs`, `exec`s into it and takes it `down`: the real engine destroys the
stack from CI's home, with the team's passphrase, the API server holds nothing of the cluster
and the backend no longer holds the stack. A teammate with another passphrase is told so and
changes nothing."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
from helpers import wait_until
from kubecluster.skyuser import KubeUser, make_user, nothing_of

pytestmark = pytest.mark.engine

PASSPHRASE = "the-team-shares-this-one"
TASK = """\
name: {name}
num_nodes: 2
resources: {{infra: k8s, cpus: 1, memory: 2}}
run: echo "rank $SKYPILOT_NODE_RANK of $SKYPILOT_NUM_NODES on $(hostname)"
"""


class Team:
    def __init__(self, cluster, bin_dir: Path, root: Path, url: str) -> None:
        self.url = url
        self.users: dict[str, KubeUser] = {}
        for who in ("laptop", "ci"):
            home, work = root / f"{who}-home", root / f"{who}-work"
            home.mkdir(mode=0o700)
            work.mkdir()
            user = make_user(cluster, bin_dir, home, work)
            user.env.update(SKYFORM_STATE_URL=url, SKYFORM_PASSPHRASE=PASSPHRASE)
            self.users[who] = user
        # one kubeconfig for both, as a team shares its cluster's context
        self.users["ci"].env["KUBECONFIG"] = self.users["laptop"].env["KUBECONFIG"]

    def backend_objects(self) -> dict[str, dict]:
        """What Pulumi's postgres backend holds (its `pulumi_state` table): key -> the JSON
        object the key's blob holds ({} for a blob that is not JSON)."""
        import psycopg

        with psycopg.connect(self.url) as conn:
            found = conn.execute("SELECT to_regclass('pulumi_state')::text").fetchone()
            if found is None or found[0] is None:
                return {}
            rows = conn.execute("SELECT key, data FROM pulumi_state").fetchall()
        objects = {}
        for key, data in rows:
            raw = base64.b64decode(data["data"])
            try:
                objects[key] = json.loads(raw) if raw.strip() else {}
            except ValueError:
                objects[key] = {}
        return objects

    def stack_checkpoint(self, name: str) -> dict | None:
        suffix = f"/.pulumi/stacks/skyform/{name}.json"
        return next((v for k, v in self.backend_objects().items() if k.endswith(suffix)), None)


@pytest.fixture
def team(kube_cluster, engine_bin_dir, pg_url, tmp_path):
    team = Team(kube_cluster, engine_bin_dir, tmp_path, pg_url)
    yield team
    team.users["ci"].sky("down", "-a", "-y", "--purge", check=None, timeout=300)
    from kubecluster.fixtures import _delete_labelled

    _delete_labelled(kube_cluster)


def local_stack_files(root: Path) -> list[Path]:
    """Every file backend's stack checkpoint under `root` (homes, work dirs, PULUMI_HOMEs)."""
    return [p for p in root.rglob("*.json*") if ".pulumi" in p.parts and "stacks" in p.parts]


def test_the_laptop_launches_into_the_postgres_backend_and_ci_takes_it_down(team, tmp_path):
    laptop, ci, name = team.users["laptop"], team.users["ci"], "k8s-team"
    laptop.task("task.yaml", TASK.format(name=name))
    # Without the team's passphrase the stack would be one no teammate could decrypt.
    alone = {k: v for k, v in laptop.env.items() if k != "SKYFORM_PASSPHRASE"}
    refused = laptop.sky("launch", "task.yaml", "-y", env=alone, check=1)
    assert "SKYFORM_PASSPHRASE is not set" in refused.stderr
    assert nothing_of(laptop, name) and team.stack_checkpoint(name) is None
    assert json.loads(ci.sky("status", "--json").stdout) == []

    began = time.monotonic()
    launched = laptop.sky("launch", "task.yaml", "-y").stdout
    print(f"launch into the postgres backend: {time.monotonic() - began:.1f} s")
    for rank in (0, 1):
        assert f"rank {rank} of 2 on {name}-{rank}" in launched
    assert f"{name}: job 1 SUCCEEDED" in launched

    # The stack is in PostgreSQL, in the table Pulumi's postgres backend keeps, made by the
    # real CLI: its checkpoint holds the cluster's pods, encrypted with a passphrase.
    checkpoint = team.stack_checkpoint(name)
    assert checkpoint is not None, sorted(team.backend_objects())
    latest = checkpoint["checkpoint"]["latest"]
    kinds = [r["type"] for r in latest["resources"]]
    assert kinds.count("kubernetes:core/v1:Pod") == 2
    assert latest["secrets_providers"]["type"] == "passphrase"
    assert not local_stack_files(tmp_path)
    assert not (laptop.home / "pulumi").exists()

    status = json.loads(ci.sky("status", "--json").stdout)
    assert [(c["name"], c["status"], c["stack"]) for c in status] == [
        (name, "UP", f"skyform/{name}")
    ]
    refreshed = ci.sky("status", "--refresh").stdout  # the engine's refresh, from CI's home
    assert name in refreshed and "UP" in refreshed and "lost" not in refreshed
    logs = ci.sky("logs", name, "1").stdout
    assert f"(k8s-team, node=1) rank 1 of 2 on {name}-1" in logs
    executed = ci.sky("exec", name, "--num-nodes", "2", "echo from-ci-on-$(hostname)").stdout
    for rank in (0, 1):
        assert f"from-ci-on-{name}-{rank}" in executed

    # Another passphrase cannot decrypt the stack: said so, nothing destroyed.
    wrong = dict(ci.env, SKYFORM_PASSPHRASE="not-the-teams")
    refused = ci.sky("down", "-y", name, env=wrong, check=1)
    assert "passphrase" in refused.stderr.lower()
    assert "SKYFORM_PASSPHRASE" in refused.stderr
    assert "not-the-teams" not in refused.output
    assert laptop.objects(name)["pods"] == [f"{name}-0", f"{name}-1"]
    assert team.stack_checkpoint(name) is not None
    status = json.loads(laptop.sky("status", "--json").stdout)
    assert [(c["name"], c["status"]) for c in status] == [(name, "UP")]

    began = time.monotonic()
    down = ci.sky("down", "-y", name)
    print(f"down from the other home: {time.monotonic() - began:.1f} s")
    assert f"removed stack skyform/{name}" in down.stdout
    wait_until(lambda: nothing_of(ci, name), 15)
    assert team.stack_checkpoint(name) is None
    assert not [k for k in team.backend_objects() if "/.pulumi/locks/" in k]
    assert json.loads(laptop.sky("status", "--json").stdout) == []
    assert not local_stack_files(tmp_path)
    assert laptop.cluster.agent.errors == []
