"""`skyform cost-report` after apply, recovery and down on real sshd nodes.

Cost = the hourly price recorded at apply × recorded uptime. Changing the pool's price in
config.yaml afterwards must not move the report (it would move `cost reprice`, which is what
that command is for).
"""

from __future__ import annotations

import json
import re
import time

import pytest
import yaml
from e2ekit import task_file, write_pool

from skyform.state.db import StateDB

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


# --- managed jobs ---------------------------------------------------------------------------
# SIMULATED RECOVERY. `skyform jobs launch` recovers for real (see the last test), but its usage
# intervals do not carry the managed job's id yet, so grouping by managed job is checked here on
# what a launch and a recovery should do to state — through public StateDB methods only: an
# interval tagged with the job's id, closed when the node is lost, and a new one at the
# replacement's price, same id. Once recovery tags its intervals, the last test's xfail goes and
# this one can go too (or swap `simulate_launch` for `skyform jobs launch` and
# `simulate_preemption_and_recovery` for `skyform debug preempt`; the assertions stay).


def simulate_launch(home, cluster: str, job_id: int, started_at: float) -> None:
    """Tag the applied cluster as managed job `job_id`, launched at `started_at`."""
    db = StateDB(home / "state.db")
    try:
        record = db.require_cluster(cluster)
        applied = db.usage()[-1]
        db.close_usage(cluster, ended_at=applied.started_at)  # the untagged apply: 0 s
        db.open_usage(record, managed_job_id=job_id, reason="launch", started_at=started_at)
    finally:
        db.close()


def simulate_preemption_and_recovery(home, cluster: str, job_id: int, at: float, price: float):
    """The node is lost at `at`; the replacement (recorded at `price` per node) starts then."""
    db = StateDB(home / "state.db")
    try:
        db.close_usage(cluster, ended_at=at)
        record = db.require_cluster(cluster)
        offer = record.spec.offer.model_copy(update={"hourly_price": price, "region": "east"})
        replacement = record.model_copy(
            update={"spec": record.spec.model_copy(update={"offer": offer}), "hourly_price": price}
        )
        db.put_cluster(replacement)
        db.open_usage(replacement, managed_job_id=job_id, reason="recovery", started_at=at)
    finally:
        db.close()


def test_cost_report_counts_every_recovery__simulated_recovery(
    sky, skyform_home, fresh_ssh_nodes, tmp_path
):
    """Launched 2 h ago at 1.50/h, preempted 1 h ago, recovered at 2.50/h, then taken down:
    1 h × 1.50 + ~1 h × 2.50 ≈ 4.00, grouped under the managed job with one recovery."""
    write_pool(skyform_home, fresh_ssh_nodes, [0])
    set_prices(skyform_home, {0: 1.5})
    task = task_file(tmp_path, "ft.yaml", TASK.format(name="ft", nodes=1))
    sky("plan", task, "-o", "plan.json", check=0)
    sky("apply", "plan.json", check=0)
    now = time.time()
    simulate_launch(skyform_home, "ft", 1, started_at=now - 2 * HOUR)
    simulate_preemption_and_recovery(skyform_home, "ft", 1, at=now - HOUR, price=2.5)
    sky("down", "-y", "ft", check=0)

    first = report(sky)
    (job,) = first["managed_jobs"]
    assert (job["managed_job_id"], job["name"], job["recoveries"]) == (1, "ft", 1)
    assert [iv["reason"] for iv in job["intervals"]] == ["launch", "recovery"]
    launch, recovery = job["intervals"]
    assert launch["cost"] == pytest.approx(1.50, abs=1e-6)
    assert recovery["hourly_cost"] == 2.5
    assert recovery["cost"] == pytest.approx(2.50, abs=0.05)  # + the seconds `down` took
    assert job["cost"] == pytest.approx(4.00, abs=0.05)
    assert job["hourly_cost"] == 2.5 and job["status"] == "TERMINATED"
    (cluster,) = first["clusters"]
    assert cluster["cost"] == pytest.approx(job["cost"]) and cluster["status"] == "TERMINATED"
    assert first["total_cost"] == pytest.approx(job["cost"])

    set_prices(skyform_home, {0: 99.0})  # prices move on; recorded ones do not
    again = report(sky)
    assert (again["clusters"], again["managed_jobs"]) == (first["clusters"], first["managed_jobs"])
    table = sky("cost-report", check=0).stdout
    assert "Managed jobs (every recovery included):" in table
    assert re.search(r"\$4\.0\d", table) and "$2.50/h" in table


# --- a real recovery: `skyform jobs launch`, a node killed, the controller's new revision -------

STEPS = """\
name: steps
resources: {infra: ssh/lab, use_spot: true, job_recovery: EAGER_NEXT_REGION}
run: for i in $(seq 1 12); do echo "step $i"; sleep 0.5; done
"""


def two_region_spot_pool(home, nodes) -> None:
    """Hosts 0-1 in region east at 0.10/h, 2-3 in west at 0.20/h; all spot."""
    hosts = []
    for i in range(4):
        h, east = nodes.handle(i), i < 2
        hosts.append(
            {
                "host": h.host,
                "port": h.port,
                "user": h.user,
                "identity_file": h.identity_file,
                "cpus": 2,
                "memory": 4,
                "hourly_price": 0.1 if east else 0.2,
                "labels": {"region": "east" if east else "west", "spot": True},
            }
        )
    config = {
        "ssh_pools": {"lab": {"hosts": hosts}},
        "recovery": {"check_interval": 1, "lost_after": 2, "max_rounds": 2},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))


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
    two_region_spot_pool(skyform_home, nodes)
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
    if not report["managed_jobs"]:
        pytest.xfail(
            "recovery does not tag usage intervals with the managed job yet "
            "(apply/clusters.provision opens them without managed_job_id): remove this "
            "xfail once it does"
        )
    (job,) = report["managed_jobs"]
    assert (job["managed_job_id"], job["name"], job["recoveries"]) == (1, "steps", 1)
    assert job["cost"] == pytest.approx(cluster["cost"])
