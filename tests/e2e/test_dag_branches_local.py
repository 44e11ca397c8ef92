"""Managed jobs whose tasks can run side by side, on the embedded `local` infra: independent
DAG branches start together and a dependent waits for all its parents; a job group
(`execution: parallel` + `primary_tasks`) ends when its primary tasks end."""

from __future__ import annotations

import json

import pytest
import yaml
from e2ekit import task_file

pytestmark = pytest.mark.e2e

STAMP = 'echo "$SKYPILOT_TASK_ID {name} {edge} $(date +%s.%N)" >> {stamps}'


def _task(name: str, stamps, seconds: float, parents=()) -> str:
    depends = f"skyform: {{depends_on: [{', '.join(parents)}]}}\n" if parents else ""
    start = STAMP.format(name=name, edge="start", stamps=stamps)
    end = STAMP.format(name=name, edge="end", stamps=stamps)
    return (
        f"name: {name}\nresources: {{infra: local}}\n{depends}"
        f"run: |\n  {start}\n  sleep {seconds}\n  {end}\n"
    )


@pytest.fixture(autouse=True)
def fast_checks(skyform_home):
    settings = {"check_interval": 0.2, "lost_after": 2, "max_rounds": 2}
    (skyform_home / "config.yaml").write_text(yaml.safe_dump({"recovery": settings}))


def _stamps(path) -> dict[tuple[str, str], float]:
    rows = [line.split() for line in path.read_text().splitlines()]
    return {(name, edge): float(at) for _, name, edge, at in rows}


def _job(sky) -> dict:
    return json.loads(sky("jobs", "queue", "--json", check=0).stdout)[0]


def test_independent_branches_run_together_and_the_dependent_waits_for_both(sky, tmp_path):
    stamps = tmp_path / "stamps"
    text = "\n---\n".join(
        [
            _task("left", stamps, 3),
            _task("right", stamps, 3),
            _task("join", stamps, 0.1, parents=("left", "right")),
        ]
    )
    sky("jobs", "launch", task_file(tmp_path, "dag.yaml", text), "-y", check=0, timeout=240)
    assert _job(sky)["status"] == "SUCCEEDED"
    at = _stamps(stamps)
    both = max(at["left", "end"], at["right", "end"]) - min(
        at["left", "start"], at["right", "start"]
    )
    assert both < 5.0  # one after the other would be 6 s and more
    assert at["join", "start"] > max(at["left", "end"], at["right", "end"])


GROUP = """\
name: rl
execution: parallel
primary_tasks: [client]
termination_delay: 1s
---
name: server
resources: {{infra: local}}
run: |
  {server_start}
  sleep 600
---
name: client
resources: {{infra: local}}
run: |
  {client_start}
  echo "$SKYPILOT_JOBGROUP_NAME $SKYFORM_JOBGROUP_NAME" > {group_env}
  getent hosts server-0.rl | cut -d' ' -f1 > {resolved}
  sleep 2
  {client_end}
"""


def test_a_job_group_ends_when_its_primary_task_does(sky, tmp_path):
    stamps = tmp_path / "stamps"
    text = GROUP.format(
        server_start=STAMP.format(name="server", edge="start", stamps=stamps),
        client_start=STAMP.format(name="client", edge="start", stamps=stamps),
        client_end=STAMP.format(name="client", edge="end", stamps=stamps),
        group_env=tmp_path / "group_env",
        resolved=tmp_path / "resolved",
    )
    sky("jobs", "launch", task_file(tmp_path, "group.yaml", text), "-y", check=0, timeout=240)
    job = _job(sky)
    assert job["status"] == "SUCCEEDED"
    assert {t["name"]: t["status"] for t in job["tasks"]} == {
        "server": "CANCELLED",
        "client": "SUCCEEDED",
    }
    at = _stamps(stamps)
    assert abs(at["server", "start"] - at["client", "start"]) < 2.0  # started together
    assert sky("status", "--json", check=0).stdout.strip() == "[]"  # every cluster torn down
    assert (tmp_path / "group_env").read_text() == "rl rl\n"  # SkyPilot's name for the group
    assert (tmp_path / "resolved").read_text() == "127.0.0.1\n"  # the server's node, by name
