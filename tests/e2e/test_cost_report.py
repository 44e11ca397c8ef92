"""`skyform cost-report` after apply, recovery and down on real sshd nodes.

Cost = the hourly price recorded at apply × recorded uptime. Changing the pool's price in
config.yaml afterwards must not move the report (it would move `cost reprice`, which is what
that command is for).
"""

from __future__ import annotations

import json
import time

import pytest
import yaml
from e2ekit import task_file, two_region_pool, write_pool

pytestmark = pytest.mark.e2e

HOUR = 3600.0
TASK = """\
name: {name}
num_nodes: {nodes}
resources: {{infra: ssh/lab}}
run: echo costed
"""


def set_prices(home, prices: dict[int, float]) -> None:
    """Give the pool's hosts (by position in config.yaml) their own hourly prices."""
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text())
    for i, price in prices.items():
        config["ssh_pools"]["lab"]["hosts"][i]["hourly_price"] = price
    path.write_text(yaml.safe_dump(config))


def report(sky) -> dict:
    return json.loads(sky("cost-report", "--json", check=0).stdout)


def test_cost_report_uses_the_price_recorded_at_apply(sky, skyform_home, fresh_ssh_nodes, tmp_path):
    write_pool(skyform_home, fresh_ssh_nodes, [0, 1])
    set_prices(skyform_home, {0: 1.5, 1: 1.5})
    task = task_file(tmp_path, "ledger.yaml", TASK.format(name="ledger", nodes=2))
    sky("plan", task, "-o", "plan.json", check=0)
    sky("apply", "plan.json", check=0)

    first = report(sky)
    (row,) = first["clusters"]
    assert (row["name"], row["status"], row["num_nodes"]) == ("ledger", "UP", 2)
    assert row["hourly_cost"] == 3.0  # 2 nodes × 1.50 recorded at apply
    (interval,) = row["intervals"]
    assert interval["ended_at"] is None  # still up: counted up to now
    assert row["cost"] == pytest.approx(3.0 * row["seconds"] / HOUR, abs=1e-6)

    # The pool gets dearer: a re-plan would price it at 9/h per node, the report does not move.
    set_prices(skyform_home, {0: 9.0, 1: 9.0})
    repriced = json.loads(sky("cost", "reprice", "plan.json", "--json", check=0).stdout)
    assert repriced["clusters"][0]["new_hourly_price"] == 9.0
    assert repriced["onprem_changed"] is True
    time.sleep(0.2)
    second = report(sky)["clusters"][0]
    assert second["hourly_cost"] == 3.0
    assert second["seconds"] > row["seconds"]  # the open interval keeps counting
    assert second["cost"] == pytest.approx(3.0 * second["seconds"] / HOUR, abs=1e-6)

    sky("down", "-y", "ledger", check=0)
    after_down = report(sky)
    (gone,) = after_down["clusters"]
    assert gone["status"] == "TERMINATED"  # a terminated cluster still appears
    assert gone["intervals"][0]["ended_at"] is not None
    assert report(sky)["clusters"] == after_down["clusters"]  # closed: no longer counting
    table = sky("cost-report", check=0).stdout
    assert "ledger" in table and "TERMINATED" in table and "$3.00/h" in table


# --- a real recovery: `skyform jobs launch`, a node killed, the controller's new revision -------

STEPS = """\
name: steps
resources: {infra: ssh/lab, use_spot: true, job_recovery: EAGER_NEXT_REGION}
run: for i in $(seq 1 12); do echo "step $i"; sleep 0.5; done
"""


def _managed_status(sky) -> str:
    return json.loads(sky("jobs", "queue", "--json", check=0).stdout)[0]["status"]


def _wait_for(sky, statuses, timeout=120.0) -> str:
    deadline = time.monotonic() + timeout
    while (status := _managed_status(sky)) not in statuses:
        assert time.monotonic() < deadline, f"managed job stuck in {status}"
        time.sleep(0.3)
    return status


def test_real_recovery_revisions_diff_and_cost_report(sky, skyform_home, make_ssh_nodes, tmp_path):
    nodes = make_ssh_nodes(4)
    two_region_pool(skyform_home, nodes)
    sky("jobs", "launch", task_file(tmp_path, "steps.yaml", STEPS), "-d", check=0)
    _wait_for(sky, {"RUNNING"})
    nodes.kill_node(next(i for i in (0, 1) if nodes.user_pids(i)))  # the spot reclaim
    assert _wait_for(sky, {"SUCCEEDED", "FAILED", "FAILED_NO_RESOURCE"}) == "SUCCEEDED"

    # the controller's plan revisions are ordinary plan files: cost diff explains the move
    revisions = json.loads(sky("jobs", "plans", "1", "--json", check=0).stdout)
    first, second = (r["path"] for r in revisions[:2])
    diff = json.loads(sky("cost", "diff", first, second, "--json", check=0).stdout)
    (moved,) = [d for d in diff["clusters"] if d["kind"] != "unchanged"]
    assert moved["moved"]
    assert (moved["before"]["offer"]["region"], moved["after"]["offer"]["region"]) == (
        "east",
        "west",
    )
    assert (moved["before"]["hourly_cost"], moved["after"]["hourly_cost"]) == (0.1, 0.2)
    (blocked,) = diff["newly_blocked"]
    assert blocked["region"] == "east" and "preempted" in blocked["reason"]
    text = sky("cost", "diff", first, second, check=0).stdout
    assert "Blocked placements in the new plan:" in text and "[new]" in text
    assert "hourly     $0.10/h → $0.20/h  (+$0.10/h)" in text

    # what it cost: both attempts, each at the price recorded when it was provisioned
    report = json.loads(sky("cost-report", "--json", check=0).stdout)
    (cluster,) = report["clusters"]
    launch, recovery = cluster["intervals"]
    assert (launch["hourly_cost"], recovery["hourly_cost"]) == (0.1, 0.2)
    assert launch["ended_at"] is not None and recovery["ended_at"] is not None
    assert cluster["status"] == "TERMINATED" and cluster["hourly_cost"] == 0.2
    assert cluster["cost"] == pytest.approx(
        sum(iv["hourly_cost"] * iv["seconds"] / HOUR for iv in cluster["intervals"]), abs=1e-6
    )
    (job,) = report["managed_jobs"]
    assert (job["managed_job_id"], job["name"], job["recoveries"]) == (1, "steps", 1)
    assert job["cost"] == pytest.approx(cluster["cost"])
