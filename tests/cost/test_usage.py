"""`skyform cost-report` core: recorded price × recorded uptime, per cluster and managed job."""

from __future__ import annotations

import pytest

from skyform.cost.usage import usage_report
from skyform.plan.model import PlacedOffer
from skyform.state.models import UsageInterval

H = 3600.0


def offer(price: float, instance: str = "b.cpu.large") -> PlacedOffer:
    return PlacedOffer(
        cloud="cloud-b",
        region="b-north",
        zone="b-north-1",
        instance_type=instance,
        spot=False,
        hourly_price=price,
    )


def interval(i, cluster, start, end, *, price, nodes=1, job=None, reason="apply", listed=None):
    return UsageInterval(
        id=i,
        cluster=cluster,
        offer=offer(listed if listed is not None else price),
        num_nodes=nodes,
        hourly_price=price,
        started_at=start,
        ended_at=end,
        managed_job_id=job,
        reason=reason,
    )


# web: 2 nodes × 1.50 for 1 h, then taken down. ft: managed job 7, launched at 2.00/h, preempted
# after 1 h and recovered onto a 2.50/h offer, still running 30 min later (now = 2.5 h).
NOW = 2.5 * H
INTERVALS = [
    interval(1, "web", 0.0, H, price=1.5, nodes=2),
    interval(2, "ft", 0.5 * H, 1.5 * H, price=2.0, job=7, reason="launch"),
    interval(3, "ft", 1.5 * H, None, price=2.5, job=7, reason="recovery"),
]


def test_costs_per_cluster_and_terminated_clusters_stay():
    report = usage_report(INTERVALS, now=NOW, cluster_status={"ft": "UP"})
    web, ft = report.clusters
    assert (web.name, web.status, web.cost, web.hourly_cost) == ("web", "TERMINATED", 3.0, 3.0)
    assert web.seconds == H
    assert (ft.name, ft.status) == ("ft", "UP")
    assert ft.cost == pytest.approx(2.0 * 1 + 2.5 * 1)  # open interval counts up to now
    assert ft.hourly_cost == 2.5  # the latest interval's recorded price
    assert ft.launched_at == 0.5 * H
    assert report.total_cost == pytest.approx(3.0 + 4.5)


def test_managed_job_sums_every_recovery():
    report = usage_report(
        INTERVALS,
        now=NOW,
        cluster_status={"ft": "UP"},
        job_names={7: "finetune"},
        job_recoveries={7: 1},  # the managed job's own count, as `jobs queue` shows it
    )
    (job,) = report.managed_jobs
    assert (job.name, job.managed_job_id, job.recoveries) == ("finetune", 7, 1)
    assert [iv.reason for iv in job.intervals] == ["launch", "recovery"]
    assert [iv.cost for iv in job.intervals] == [pytest.approx(2.0), pytest.approx(2.5)]
    assert job.cost == pytest.approx(4.5)
    assert job.status == "UP"


def test_unknown_managed_job_is_named_after_its_first_cluster():
    (job,) = usage_report(INTERVALS, now=NOW).managed_jobs
    assert job.name == "ft" and job.status == "UP"


def test_recorded_price_is_never_repriced():
    """The offer says 9.00/h today; the interval recorded 2.00/h at apply: 2.00 counts."""
    iv = interval(1, "x", 0.0, H, price=2.0, listed=9.0)
    assert usage_report([iv], now=H).total_cost == 2.0


def test_window_clips_uptime_and_drops_older_intervals():
    since = 1.0 * H + 0.25 * H  # web ended before: gone; ft's launch is clipped to 15 min
    report = usage_report(INTERVALS, now=NOW, since=since)
    assert [c.name for c in report.clusters] == ["ft"]
    (ft,) = report.clusters
    launch, recovery = ft.intervals
    assert launch.seconds == pytest.approx(0.25 * H)
    assert launch.cost == pytest.approx(0.5)
    assert recovery.cost == pytest.approx(2.5)
    assert ft.launched_at == 0.5 * H  # when it was launched, not where the window starts


def test_nothing_recorded():
    report = usage_report([], now=NOW)
    assert report.clusters == [] and report.managed_jobs == [] and report.total_cost == 0
