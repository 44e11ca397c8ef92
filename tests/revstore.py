"""A state store as skyform left it at schema 8, holding plan revisions of both kinds in
their two tables then (plan_revisions, service_revisions): the migration to one revision
table must keep every one of them. Made from the store of this version by putting the two
old tables back as migrations 2, 6 and 8 wrote them."""

from __future__ import annotations

import json

from skyform.digests import sha256
from skyform.state.db import open_state
from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedTask
from skyform.state.schema import MIGRATIONS

PLAN_1 = b'{"plan": "the launch plan"}\n'
PLAN_2 = b'{"plan": "the plan after a preemption"}\n'
RECOVERY = "recovery 1 of task t: preempted; another zone"
# managed job 1: (revision, reason, path, plan bytes); revision 3 made before schema 6 kept
# its plan only in its file
MANAGED = [
    (1, "launch", "/h/jobs/1/plans/rev-1.json", PLAN_1),
    (2, RECOVERY, "/h/jobs/1/plans/rev-2.json", PLAN_2),
    (3, "recovery 2 of task t: preempted; anywhere", "/h/jobs/1/plans/rev-3.json", None),
]
SERVICE_REVISIONS = [
    {"revision": 1, "created_at": 100.25, "kind": "up", "reason": "2 replicas wanted",
     "version": 1, "target": 2, "launched": [1, 2], "terminated": [],
     "replicas": [{"replica_id": 1, "version": 1, "role": "spot", "infra": "aws/us-east-1",
                   "status": "PROVISIONING"},
                  {"replica_id": 2, "version": 1, "role": "on-demand", "status": "PROVISIONING"}]},
    {"revision": 2, "created_at": 160.5, "kind": "preemption", "reason": "replica 1 preempted",
     "version": 1, "target": 2, "launched": [3], "terminated": [1],
     "replicas": [{"replica_id": 2, "version": 1, "role": "on-demand", "status": "READY"},
                  {"replica_id": 3, "version": 1, "role": "spot", "status": "PROVISIONING"}]},
]  # fmt: skip


def _old_tables() -> list[str]:
    return [
        step
        for version in (2, 6, 8)
        for step in MIGRATIONS[version]
        if isinstance(step, str) and ("plan_revisions" in step or "service_revisions" in step)
    ]


def make_schema_8_store(url: str | None = None) -> None:
    """The store at `url` (the command's, by default) as schema 8 had it, with managed job 1's
    three revisions and service web's two."""
    with open_state(url=url) as db:
        ManagedJobs(db).create(
            ManagedJobRecord(
                id=0,
                name="train",
                task_file="/t.yaml",
                tasks=[ManagedTask(index=0, name="t", cluster="j1-t")],
                submitted_at=1.0,
            )
        )
        with db.transaction() as conn:
            if "plan_revisions" not in db._table_names():  # (a skyform of schema 8 has them)
                conn.execute("DROP TABLE revisions")
                for statement in _old_tables():
                    conn.execute(db._ddl(statement))
            conn.executemany(
                "INSERT INTO plan_revisions (job_id, revision, created_at, reason, path, "
                "digest, plan) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(1, n, 10.5 * n, why, path, sha256(plan or path), plan and plan.decode())
                 for n, why, path, plan in MANAGED],
            )  # fmt: skip
            conn.executemany(
                "INSERT INTO service_revisions (service, revision, created_at, kind, record) "
                "VALUES (?, ?, ?, ?, ?)",
                [("web", r["revision"], r["created_at"], r["kind"], json.dumps(r))
                 for r in SERVICE_REVISIONS],
            )  # fmt: skip
            conn.execute("UPDATE meta SET value='8' WHERE key='schema_version'")
