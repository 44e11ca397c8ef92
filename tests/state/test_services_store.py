"""Services in the state store (state/services.py through serve/state.py), on SQLite and on a
real PostgreSQL: two homes creating one name at once, exactly one wins and the other is
told whose it is; the controller's record is written only when it changed; an older
skyform's JSON records are moved into the store once (a torn file skipped with a warning);
the load balancer's counters become one clean row per window."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from skyform.errors import SkyformError
from skyform.paths import take_notices
from skyform.serve import revisions, state, versions
from skyform.serve.lb.metrics import Metrics
from skyform.serve.lbstats import ZERO, parse_metrics, window_of
from skyform.state.db import open_state
from skyform.state.services import Services


def _record(name: str = "web") -> state.ServiceRecord:
    return state.ServiceRecord(name=name, task_path="/srv/web.yaml", created_at=1.0)


def test_two_homes_creating_one_service_at_once_one_wins_the_other_names_the_owner(
    backend: str, tmp_path: Path
):
    open_state().close()  # made and migrated before the race
    results: list[object] = [None, None]
    go = threading.Barrier(2)

    def create(i: int) -> None:
        with open_state() as db:  # each home its own connection
            go.wait()
            results[i] = Services(db).create(
                "web", owner=f"user{i}@host", host="host", home=f"/home/{i}", status="X",
                record="{}",
            )  # fmt: skip

    threads = [threading.Thread(target=create, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r is None for r in results) == [False, True], results
    loser = next(r for r in results if r is not None)
    winner = 1 - results.index(loser)
    assert loser.owner == f"user{winner}@host"  # type: ignore[attr-defined]

    with pytest.raises(SkyformError) as refused:
        state.create_record(_record())
    assert f"made by user{winner}@host" in refused.value.message
    assert f"/home/{winner}" in refused.value.message


def test_the_record_is_written_only_when_it_changed(backend: str):
    record = _record()
    state.create_record(record)
    assert state.write_record(record)
    with open_state() as db:
        (first,) = db.execute_tuples("SELECT updated_at FROM services WHERE name='web'")
        assert state.write_record(record)  # unchanged: no write
        (again,) = db.execute_tuples("SELECT updated_at FROM services WHERE name='web'")
        assert again == first
        changed = record.model_copy(update={"status": state.ServiceStatus.READY})
        assert state.write_record(changed)
        (after,) = db.execute_tuples("SELECT status, updated_at FROM services WHERE name='web'")
    assert after[0] == "READY" and after[1] > first[0]
    assert state.require("web").status == state.ServiceStatus.READY
    state.remove("web")
    assert not state.write_record(changed)  # gone from the store: the controller stops
    assert state.list_services() == []


def _old_files(home: Path) -> Path:
    folder = home / "serve" / "web"
    (folder / "versions").mkdir(parents=True)
    (folder / "plans").mkdir()
    (folder / "controller.log").write_text("started\n")
    (folder / "service.json").write_text(
        json.dumps(
            {
                "name": "web",
                "task_path": "/srv/web.yaml",
                "version": 2,
                "status": "READY",
                "endpoint": "http://127.0.0.1:30001",
                "created_at": 5.0,
                "replicas": [
                    {"replica_id": 1, "version": 2, "cluster": "web-1", "status": "READY"},
                    {"replica_id": 3, "version": 2, "cluster": "web-3", "status": "STARTING"},
                ],
                "an_old_field": 1,
            },
            indent=1,
        )
    )
    for n in (1, 2):
        (folder / "versions" / f"{n}.json").write_text(
            json.dumps({"number": n, "task_path": "/srv/web.yaml", "task_text": f"v{n}"})
        )
    revision = {"revision": 1, "created_at": 6.0, "kind": "up", "reason": "first",
                "version": 1, "target": 1, "replicas": []}  # fmt: skip
    (folder / "plans" / "1.json").write_text(json.dumps(revision))
    (folder / "plans" / "2.json").write_text('{"revision": 2, "created_')  # torn
    return folder


def test_json_records_of_an_older_skyform_are_moved_into_the_store_once(
    backend: str, skyform_home: Path
):
    folder = _old_files(skyform_home)
    assert state.list_services() == ["web"]  # the first opening imports them
    record = state.require("web")
    assert (record.status, record.version, record.endpoint) == (
        "READY",
        2,
        "http://127.0.0.1:30001",
    )
    assert [(r.replica_id, r.status) for r in record.replicas] == [(1, "READY"), (3, "STARTING")]
    assert versions.numbers("web") == [1, 2]
    assert versions.load("web", 2).task_text == "v2"  # type: ignore[union-attr]
    assert [r.reason for r in revisions.load_all("web")] == ["first"]
    notices = take_notices()
    assert any(str(folder / "plans" / "2.json") in n and "skipped" in n for n in notices)
    # JSON gone, the folder (logs, LB files) and the torn file stay
    assert not (folder / "service.json").exists() and not (folder / "versions").exists()
    assert (folder / "controller.log").read_text() == "started\n"
    assert (folder / "plans" / "2.json").exists()

    # again (a crash left service.json behind): nothing doubles, the file goes
    (folder / "service.json").write_text(json.dumps({"name": "web", "task_path": "/x"}))
    assert state.import_legacy(state.store()) == ["web"]
    assert versions.numbers("web") == [1, 2] and len(revisions.load_all("web")) == 1
    assert not (folder / "service.json").exists()
    assert state.import_legacy(state.store()) == []


def test_a_torn_service_json_is_skipped_with_a_warning_not_a_crash(skyform_home: Path):
    folder = skyform_home / "serve" / "torn"
    folder.mkdir(parents=True)
    (folder / "service.json").write_text('{"name": "torn", "task_pa')
    assert state.list_services() == []
    assert any("service.json could not be read" in n for n in take_notices())
    (folder / "service.json").write_text('{"name": "torn", "task_path": 3}')
    assert state.import_legacy(state.store()) == []
    assert any("service.json is not a record skyform wrote" in n for n in take_notices())
    assert (folder / "service.json").exists()


def test_the_lb_counters_become_one_row_per_window_with_percentiles():
    metrics = Metrics()
    for _ in range(90):
        metrics.observe(200, 0.004, 1)  # in the 2.5-5 ms bucket
    for _ in range(10):
        metrics.observe(502, 0.3, 1)  # in the 250-500 ms bucket
    before = parse_metrics(metrics.render("web", {}, 1, 0))
    window = window_of("web", 100.0, 10.0, ZERO, before)
    assert (window.requests, window.errors) == (100, 10)
    assert 2.5 < window.p50_ms < 5.0  # type: ignore[operator]
    assert 250.0 < window.p95_ms < 500.0  # type: ignore[operator]
    metrics.observe(200, 0.004, 1)
    after = parse_metrics(metrics.render("web", {}, 1, 0))
    quiet = window_of("web", 110.0, 10.0, before, after)
    assert (quiet.requests, quiet.errors) == (1, 0)
    empty = window_of("web", 120.0, 10.0, after, after)
    assert (empty.requests, empty.p50_ms, empty.p95_ms) == (0, None, None)


def test_another_machines_controller_counts_as_running_while_it_holds_the_lease(backend: str):
    """The service's lease `service/<name>` says whether a controller runs it, from any home:
    one held on another machine (its pid cannot be checked from here) counts until it
    expires; then the service shows CONTROLLER_FAILED."""
    from skyform.ops.serve.service import statuses

    record = _record().model_copy(update={"status": state.ServiceStatus.READY})
    services = state.store()
    text = record.model_dump_json(exclude={"replicas"})
    services.create(
        "web", owner="bob@elsewhere", host="there", home="/home/bob", status="READY", record=text
    )
    assert not state.controller_alive("web")  # no lease yet
    with open_state() as db:
        lease = db.try_lease("service/web", purpose="a controller elsewhere", ttl=60)
        assert lease is not None
        with db.transaction() as conn:  # as another machine's controller would hold it
            conn.execute("UPDATE leases SET host='there', pid=1 WHERE name='service/web'")
    assert state.controller_alive("web")
    assert [r.status for r in statuses(["web"])] == ["READY"]
    with open_state() as db, db.transaction() as conn:
        conn.execute("UPDATE leases SET expires_at=? WHERE name='service/web'", (time.time() - 1,))
    assert not state.controller_alive("web")
    assert [r.status for r in statuses(["web"])] == ["CONTROLLER_FAILED"]
