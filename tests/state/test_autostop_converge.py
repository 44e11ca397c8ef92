"""State converging on what a cloud node's agent did (no cloud: the engine is a stand-in
recording calls): a head that shut itself down is recorded STOPPED through its stack, and
a STOPPED cluster whose down_after has passed is torn down."""

from __future__ import annotations

import time

import pytest

from skyform.config import Config
from skyform.lifecycle import clusters
from skyform.ops import autostop
from skyform.plan.model import AutostopSetting, ClusterSpec, PlacedOffer
from skyform.stacks import registry as engines
from skyform.stacks.engine import ClusterState, NodeState
from skyform.state.db import open_state
from skyform.state.models import ClusterHandle, ClusterRecord, ClusterStatus, NodeHandle

AWS = PlacedOffer(
    cloud="aws", region="us-east-1", zone="use1-az1", instance_type="m5.large", spot=False,
    hourly_price=0.096,
)  # fmt: skip


class StandInEngine:
    name = "pulumi"

    def __init__(self, detail: str) -> None:
        self.detail = detail
        self.calls: list[str] = []

    def refresh(self, handle):
        self.calls.append("refresh")
        nodes = [NodeState(rank=0, node_id="i-0", alive=False, detail=self.detail)]
        return ClusterState(name=handle.name, exists=True, nodes=nodes)

    def stop(self, spec, handle, emit):
        self.calls.append("stop")

    def destroy(self, handle, emit):
        self.calls.append("destroy")


@pytest.fixture
def db():
    state = open_state()
    yield state
    state.close()


def _record(db, setting: AutostopSetting, opened_at: float | None = None, **kw) -> ClusterRecord:
    spec = ClusterSpec(name="box", offer=AWS, num_nodes=1, autostop=setting)
    node = NodeHandle(rank=0, host="54.0.0.1", ip="172.31.0.1", node_id="i-0")
    handle = ClusterHandle(name="box", engine="pulumi", infra=AWS.infra, offer=AWS, nodes=[node])
    record = ClusterRecord(
        name="box", status=ClusterStatus.UP, spec=spec, handle=handle, hourly_price=0.096, **kw
    )
    db.put_cluster(record)
    db.open_usage(record, started_at=opened_at)
    return record


def _stand_in(monkeypatch, detail: str) -> StandInEngine:
    fake = StandInEngine(detail)
    monkeypatch.setattr(engines, "engine_for", lambda *a, **k: fake)
    monkeypatch.setattr(clusters, "engine_for", lambda *a, **k: fake)
    monkeypatch.setattr(autostop, "_report", lambda record: None)  # the head does not answer
    return fake


def test_a_cloud_head_that_shut_itself_down_is_recorded_stopped(db, monkeypatch):
    fake = _stand_in(monkeypatch, "stopped")
    record = _record(db, AutostopSetting(stop_after=10))
    after, note = autostop.converge(db, Config(), record, emit=lambda _m: None)
    assert after is not None and after.status is ClusterStatus.STOPPED
    assert note == "stopped by autostop (idle for 10 min)"
    assert fake.calls == ["refresh", "stop"]  # the stack records the instances stopped
    (interval,) = db.usage()
    assert interval.ended_at is not None  # no compute while stopped


def test_a_head_that_shut_itself_down_is_billed_until_its_timer_ran_out(db, monkeypatch):
    """It cannot say when it stopped: the stop is put at the idle timer after the last
    activity skyform saw (here its job's end), not at this `status --refresh` hours later."""
    from skyform.state.models import JobRecord, JobStatus

    _stand_in(monkeypatch, "stopped")
    now = time.time()
    up_at = now - 5 * 3600
    record = _record(db, AutostopSetting(stop_after=10), up_at, launched_at=up_at)
    job_end = now - 3 * 3600
    job = JobRecord(
        cluster="box", job_id=db.next_job_id("box"), name="train", task_id="t",
        status=JobStatus.SUCCEEDED,
        submitted_at=now - 4 * 3600, started_at=now - 4 * 3600, ended_at=job_end,
    )  # fmt: skip
    db.put_job(job)
    after, _ = autostop.converge(db, Config(), record, emit=lambda _m: None, now=now)
    assert after is not None and after.status is ClusterStatus.STOPPED
    assert after.stopped_at == pytest.approx(job_end + 600, abs=5)
    assert after.last_active_at == pytest.approx(job_end, abs=5)  # down_after counts from it
    (billed,) = db.usage()
    assert billed.ended_at == pytest.approx(job_end + 600, abs=5)  # not `now`: 2 h 50 min less


def test_an_unreachable_head_that_is_running_is_left_alone(db, monkeypatch):
    fake = _stand_in(monkeypatch, "running")
    record = _record(db, AutostopSetting(stop_after=10))
    after, note = autostop.converge(db, Config(), record, emit=lambda _m: None)
    assert (after, note) == (record, None)
    assert fake.calls == ["refresh"]


def test_stopped_longer_than_down_after_is_torn_down(db, monkeypatch):
    fake = _stand_in(monkeypatch, "stopped")
    setting = AutostopSetting(stop_after=30, down_after=60)
    record = _record(db, setting)
    now = time.time()
    stopped = record.model_copy(  # by autostop: its last activity was 30 min before
        update={"status": ClusterStatus.STOPPED, "stopped_at": now, "last_active_at": now - 1800}
    )
    db.put_cluster(stopped)
    # idle 30 min before the stop + 29 min stopped < 60: kept
    kept, note = autostop.converge(db, Config(), stopped, emit=lambda _m: None, now=now + 29 * 60)
    assert (kept, note) == (stopped, None)
    gone, note = autostop.converge(db, Config(), stopped, emit=lambda _m: None, now=now + 31 * 60)
    assert gone is None and note and "stopped for longer than down_after" in note
    assert fake.calls == ["destroy"]
    assert db.get_cluster("box") is None
