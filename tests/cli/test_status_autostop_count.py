"""`status`'s closing hint counts the clusters whose autostop the table may not show yet (what
`status --refresh` takes in), by what comes next: a stop or a tear-down (issue 28: stopped
clusters with a down timer were left out, `down: true` ones were called autostop, and
"1 cluster(s) have")."""

from __future__ import annotations

import time

from skyform.cli.render.clusters import render_status
from skyform.plan.model import AutostopSetting, ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.models import ClusterRecord, ClusterStatus

AWS = PlacedOffer(
    cloud="aws", region="us-east-1", zone="us-east-1a", instance_type="m7a.large",
    spot=False, hourly_price=0.1,
)  # fmt: skip
LOCAL = PlacedOffer(
    cloud="local", region="local", zone=None, instance_type="local", spot=False, hourly_price=0.0
)
STOP = AutostopSetting(stop_after=10)
DOWN = AutostopSetting(down_after=10)
BOTH = AutostopSetting(stop_after=10, down_after=7 * 24 * 60)
REFRESH = "Refresh statuses with: skyform status --refresh"


def _record(name: str, status: ClusterStatus, autostop, offer=AWS) -> ClusterRecord:
    return ClusterRecord(
        name=name,
        status=status,
        hourly_price=offer.hourly_price,
        spec=ClusterSpec(name=name, offer=offer, num_nodes=1, autostop=autostop),
        launched_at=time.time() - 3600,
    )


def _hint(records: list[ClusterRecord], capsys) -> list[str]:
    render_status(records, {}, {}, verbose=False, as_json=False)
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("* ")]


def test_stops_and_tear_downs_are_counted_apart(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    records = [
        _record("up-stop", ClusterStatus.UP, STOP),
        _record("up-down", ClusterStatus.UP, DOWN),
        _record("stopped-then-down", ClusterStatus.STOPPED, BOTH),  # its down timer runs
        _record("stopped", ClusterStatus.STOPPED, STOP),  # nothing left to do
        _record("starting", ClusterStatus.INIT, STOP),  # no agent acts before apply ends
        _record("here", ClusterStatus.UP, STOP, LOCAL),  # taken in on every status
        _record("plain", ClusterStatus.UP, None),
    ]
    assert _hint(records, capsys) == [
        f"* 3 clusters have autostop (1) or autodown (2) scheduled. {REFRESH}"
    ]


def test_one_cluster_is_one_and_down_true_is_autodown(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert _hint([_record("d", ClusterStatus.UP, DOWN)], capsys) == [
        f"* 1 cluster has autodown scheduled. {REFRESH}"
    ]
    assert _hint([_record("s", ClusterStatus.UP, STOP)], capsys) == [
        f"* 1 cluster has autostop scheduled. {REFRESH}"
    ]
    assert _hint([_record("s", ClusterStatus.STOPPED, STOP)], capsys) == []


def test_the_status_verb_prints_the_hint(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with open_state() as db:
        db.put_cluster(_record("up-down", ClusterStatus.UP, DOWN))
        db.put_cluster(_record("stopped-then-down", ClusterStatus.STOPPED, BOTH))
    shown = cli("status")
    assert shown.exit_code == 0, shown.output
    assert f"* 2 clusters have autodown scheduled. {REFRESH}" in shown.stdout
