"""The dashboard's pure parts: the cost report cut per UTC day, and the guard's rules for
Host, Origin and tokens (the browser tests drive them end to end)."""

from __future__ import annotations

import pytest

from skyform.cost.model import IntervalCost, UsageReport, UsageRow
from skyform.ops.dashboard.cost_view import per_cluster, per_day
from skyform.ops.dashboard.guard import Guard
from skyform.plan.model import PlacedOffer

DAY = 86400.0
OFFER = PlacedOffer(
    cloud="local", region="local", zone=None, instance_type="local", spot=False, hourly_price=1.0
)


def _row(name: str, start: float, end: float | None, cost: float, now: float) -> UsageRow:
    seconds = (end or now) - start
    iv = IntervalCost(id=1, cluster=name, offer=OFFER, num_nodes=1, hourly_cost=1.0,
                      started_at=start, ended_at=end, seconds=seconds, cost=cost)  # fmt: skip
    return UsageRow(name=name, launched_at=start, seconds=seconds, offer=OFFER, num_nodes=1,
                    status="UP", hourly_cost=1.0, cost=cost, intervals=[iv])  # fmt: skip


def test_an_interval_across_midnight_is_split_by_its_seconds_on_each_day():
    midnight = 20000 * DAY  # 2024-10-04 00:00 UTC
    now = midnight + DAY
    report = UsageReport(
        now=now,
        clusters=[
            _row("a", midnight - 6 * 3600, midnight + 18 * 3600, 24.0, now),  # 6 h + 18 h
            _row("b", midnight + 3600, None, 23.0, now),  # still up: counted up to now
        ],
    )
    days = per_day(report)
    assert [d for d, _ in days] == ["2024-10-03", "2024-10-04"]
    assert [c for _, c in days] == pytest.approx([6.0, 18.0 + 23.0])
    assert per_cluster(report) == [("a", 24.0), ("b", 23.0)]


def test_the_guard_rules():
    local = Guard("127.0.0.1", None)
    assert local.host_allowed("127.0.0.1:8765") and local.host_allowed("localhost:8765")
    assert local.host_allowed("[::1]:8765")
    assert not local.host_allowed("attacker.example:8765") and not local.host_allowed(None)
    assert local.token_ok(None)
    remote = Guard("0.0.0.0", "s3cret", allow_actions=True)
    assert remote.host_allowed("dash.example.com:8765")  # the token guards it instead
    assert not remote.token_ok(None) and not remote.token_ok("s3cre") and remote.token_ok("s3cret")
    assert remote.same_origin("http://dash.example.com:8765", "dash.example.com:8765")
    assert not remote.same_origin("http://evil.example", "dash.example.com:8765")
    assert not remote.same_origin("null", "dash.example.com:8765")
    assert not remote.same_origin(None, "dash.example.com:8765")
    assert remote.csrf_ok(remote.csrf) and not remote.csrf_ok("") and not remote.csrf_ok("x")


def test_list_pages_are_bounded_and_counted_in_the_store(backend):
    """On each store the CLI uses: SQLite and the team's PostgreSQL."""
    from helpers import local_cluster_record

    from skyform.ops.dashboard import reads
    from skyform.state.db import open_state
    from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedTask
    from skyform.state.models import JobRecord, JobStatus

    with open_state() as db:
        for c in range(3):
            db.put_cluster(local_cluster_record(f"c{c}"))
            for j in range(1, 41):
                db.put_job(
                    JobRecord(
                        cluster=f"c{c}",
                        job_id=j,
                        name=f"j{j}",
                        task_id=f"t{c}-{j}",
                        status=JobStatus.SUCCEEDED,
                        submitted_at=1.0,
                    )
                )
        sizes = [len(reads.jobs_page(db, n)[0]) for n in (1, 2, 3)]
        lines, page = reads.jobs_page(db, 99)  # past the end: the last page
        mine, own = reads.jobs_page(db, 1, cluster="c1")
        clusters, cpage = reads.clusters_page(db, 1)
        ManagedJobs(db).create(
            ManagedJobRecord(id=0, name="mj", task_file="/tmp/t.yaml", submitted_at=1.0,
                             tasks=[ManagedTask(index=0, name="mj", cluster="c1")])
        )  # fmt: skip
        owner = reads.managed_owner(db, "c1")
        none_owns_c2 = reads.managed_owner(db, "c2") is None
    assert owner is not None and owner.name == "mj" and none_owns_c2
    assert sizes == [50, 50, 20] and (page.number, page.last, page.total) == (3, 3, 120)
    assert [line.job_id for line in lines][:2] == [20, 19]  # c2's jobs, newest first
    assert own.total == 40 and {line.cluster for line in mine} == {"c1"}
    assert [c.name for c in clusters] == ["c0", "c1", "c2"] and cpage.total == 3
