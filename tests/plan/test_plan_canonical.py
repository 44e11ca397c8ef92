"""Apply acts on exactly the canonical content the digest covers (issue 26): two plan files
whose bytes differ and whose canonical content matches lead to the same actions, limits
and prices — and what apply records and tags is the content digest the review posted,
not a digest of whatever bytes the file happened to have."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from realplans import make_plans
from rewrites import all_at_once, rewrites

from skyform.plan.planfile import content_digest, parse_plan, read_plan

TASK = """\
name: limits
resources: {infra: local, cpus: 1+}
num_nodes: 2
envs: {GREETING: "héllo"}
setup: echo set up
run: echo "$GREETING from $SKYFORM_NODE_RANK"
"""


def test_every_rewrite_reads_as_the_same_plan(cli, skyform_home, tmp_path):
    plans = make_plans(cli, skyform_home, tmp_path)
    count = 0
    for kind, path in plans.items():
        original, data = read_plan(path)
        raw = json.loads(data)
        for label, text in rewrites(raw):
            assert text.encode() != data, (kind, label)
            plan = parse_plan(text.encode(), label)
            assert plan == original, (kind, label)
            assert content_digest(plan) == raw["digest"], (kind, label)
            count += 1
    assert count >= 60


def _normalized(text: str, home: Path) -> str:
    text = text.replace(str(home), "HOME")
    return re.sub(r"\d+(\.\d+)? (sec|secs|min|mins) ago", "AGO", text)


def _recorded(cli, home: Path) -> dict:
    """What state says about the cluster and its job, without times."""
    from skyform.state.db import open_state

    with open_state() as db:
        record = db.require_cluster("limits")
        jobs = db.list_jobs("limits")
    kept = record.model_dump(
        mode="json", exclude={"launched_at", "handle", "last_active_at", "stopped_at"}
    )
    nodes = [n.model_dump(mode="json") for n in record.handle.nodes] if record.handle else []
    runs = [
        j.model_dump(mode="json", include={"job_id", "name", "status", "exit_codes", "resources"})
        for j in jobs
    ]
    return json.loads(
        _normalized(json.dumps({"cluster": kept, "nodes": nodes, "jobs": runs}), home)
    )


def _flat(value, path: str = "") -> dict:
    """{dotted path: scalar} of a JSON value, to name what differs."""
    if isinstance(value, dict):
        return {
            k: v for key, item in value.items() for k, v in _flat(item, f"{path}.{key}").items()
        }
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _flat(item, f"{path}.{i}").items()}
    return {path: value}


@pytest.fixture
def planned(cli, tmp_path) -> tuple[Path, Path]:
    """The plan as written, and the same plan rewritten every way at once."""
    task = tmp_path / "limits.yaml"
    task.write_text(TASK)
    written = tmp_path / "written.json"
    assert cli("plan", task, "-o", written).exit_code == 0
    rewritten = tmp_path / "rewritten.json"
    rewritten.write_text(all_at_once(json.loads(written.read_text())))
    assert rewritten.read_bytes() != written.read_bytes()
    return written, rewritten


def test_two_spellings_of_one_plan_apply_the_same(cli, tmp_path, monkeypatch, planned):
    outcome = {}
    for path in planned:
        home = tmp_path / f"home-{path.stem}"
        monkeypatch.setenv("SKYFORM_HOME", str(home))
        shown = cli("show", path)
        cost = cli("cost", "estimate", path, "--json")
        applied = cli("apply", path, "-y")
        assert applied.exit_code == 0, applied.output
        outcome[path.stem] = {
            "show": shown.stdout,
            "cost": json.loads(cost.stdout),
            # the nodes report from threads: the same lines, in any order
            "apply": sorted(_normalized(applied.stdout, home).splitlines()),
            "state": _recorded(cli, home),
        }
        assert cli("down", "-y", "limits").exit_code == 0
    written, rewritten = outcome["written"], outcome["rewritten"]
    for what in ("show", "cost", "apply", "state"):
        differs = sorted(
            k
            for k in _flat(written[what])
            if _flat(written[what])[k] != _flat(rewritten[what]).get(k)
        )
        assert written[what] == rewritten[what], (what, differs)
    digest = json.loads(planned[0].read_text())["digest"]
    # the digest apply records (and tags cloud resources with) is the reviewed one
    assert written["state"]["cluster"]["plan_digest"] == digest
