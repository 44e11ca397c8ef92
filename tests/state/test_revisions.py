"""One plan-revision model for managed jobs and services: one table (`revisions`, owner
`managed/<id>` or `service/<name>`), one numbering and one store API. A store of the schema
before (two tables) upgrades in place without losing a revision, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from revstore import MANAGED, PLAN_1, PLAN_2, SERVICE_REVISIONS, make_schema_8_store

from skyform.errors import StateError
from skyform.serve import revisions as service_revisions
from skyform.state.db import open_state
from skyform.state.managed import ManagedJobs
from skyform.state.revisions import Revisions, job_owner, service_owner
from skyform.state.schema import SCHEMA_VERSION


def _tables(db) -> set[str]:
    return db._table_names()


def test_a_schema_8_store_keeps_every_revision_of_both_kinds_in_the_one_table(
    backend, skyform_home, cli
):
    make_schema_8_store()
    with open_state() as db:  # the upgrade runs here
        assert {"plan_revisions", "service_revisions"}.isdisjoint(_tables(db))
        assert "revisions" in _tables(db)
        store = Revisions(db)
        managed = store.list(job_owner(1))
        assert [(r.revision, r.kind, r.reason, r.path) for r in managed] == [
            (n, "launch" if n == 1 else "recovery", why, path) for n, why, path, _ in MANAGED
        ]
        assert [r.created_at for r in managed] == [10.5, 21.0, 31.5]
        assert [store.body(r) for r in managed] == [PLAN_1, PLAN_2, None]
        web = store.list(service_owner("web"))
        assert [(r.revision, r.created_at, r.kind, r.reason) for r in web] == [
            (1, 100.25, "up", "2 replicas wanted"),
            (2, 160.5, "preemption", "replica 1 preempted"),
        ]
        # the numbering continues where each owner's left off
        assert store.add(job_owner(1), kind="recovery", reason="r", body=b"{}").revision == 4
        assert store.add(service_owner("web"), kind="scale", reason="s", body=b"{}").revision == 3
        assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[
            "value"
        ] == str(SCHEMA_VERSION)
    # what `serve plans` lists is as the old table held it
    shown = [r.model_dump(mode="json") for r in service_revisions.load_all("web")[:2]]
    assert shown == [
        {**r, "replicas": [{"infra": None, **p} for p in r["replicas"]]} for r in SERVICE_REVISIONS
    ]
    # and `jobs plans --json`, field for field
    listed = cli("jobs", "plans", "1", "--json")
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [(r["job_id"], r["revision"], r["reason"], r["path"]) for r in rows[:3]] == [
        (1, n, why, path) for n, why, path, _ in MANAGED
    ]
    assert set(rows[0]) == {"job_id", "revision", "created_at", "reason", "path", "digest"}


def test_both_kinds_are_listed_numbered_and_forgotten_through_one_api(backend, skyform_home):
    with open_state() as db:
        store = Revisions(db)
        first = store.add(job_owner(7), kind="launch", reason="launch", body=b"plan 1")
        store.add(service_owner("web"), kind="up", reason="1 replica", body=b"{}")
        again = store.add(job_owner(7), kind="recovery", reason="preempted", body=b"plan 2")
        assert (first.revision, again.revision) == (1, 2)
        recent = store.recent(10)
        assert [(r.owner, r.revision) for r in recent] == [
            ("managed/7", 2),
            ("service/web", 1),
            ("managed/7", 1),
        ]
        assert [(r.job_id, r.service) for r in recent] == [(7, None), (None, "web"), (7, None)]
        assert store.body(again) == b"plan 2"
        ManagedJobs(db).delete(7)
        assert store.list(job_owner(7)) == [] and len(store.recent(10)) == 1


def test_a_body_changed_in_the_store_does_not_match_its_digest_and_is_refused(
    backend, skyform_home
):
    with open_state() as db:
        made = Revisions(db).add(job_owner(1), kind="launch", reason="launch", body=b"plan")
        with db.transaction() as conn:
            conn.execute("UPDATE revisions SET body='edited' WHERE owner='managed/1'")
        with pytest.raises(StateError, match="does not match its digest"):
            Revisions(db).body(made)
