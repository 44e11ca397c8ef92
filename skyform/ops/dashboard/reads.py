"""Bounded, set-based reads of the state store for the dashboard's pages.

Every list is one query with LIMIT/OFFSET plus one COUNT: a page costs the same with 10 or
10,000 rows in the store, and no page issues a query per row. Records are read as JSON
dicts (no pydantic on the list pages); every field is checked for its type because the
store is untrusted input like any file skyform reads.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from skyform.infra import infra_path
from skyform.state.db import StateDB
from skyform.state.revisions import Revision, Revisions, job_owner

PAGE_SIZE = 50


@dataclass(frozen=True)
class Page:
    number: int  # from 1
    size: int
    total: int

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.size

    @property
    def last(self) -> int:
        return max(1, -(-self.total // self.size))


def page_of(number: int, total: int, size: int = PAGE_SIZE) -> Page:
    return Page(min(max(1, number), max(1, -(-total // size))), size, total)


def _paged(
    db: StateDB, number: int, table_and_where: str, columns: str, order: str, args: tuple = ()
) -> tuple[list[tuple], Page]:
    """One page of a table's rows: a COUNT for the page count, then one LIMIT/OFFSET query
    (never a query per row). `table_and_where` and `order` are this module's constants."""
    (total,) = db.execute_tuples(f"SELECT COUNT(*) FROM {table_and_where}", args)[0]
    page = page_of(number, total)
    rows = db.execute_tuples(
        f"SELECT {columns} FROM {table_and_where} ORDER BY {order} LIMIT ? OFFSET ?",
        (*args, page.size, page.offset),
    )
    return rows, page


def _text(data: Any, key: str, default: str = "") -> str:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) else default


def _num(data: Any, key: str) -> float | None:
    value = data.get(key) if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _loads(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class ClusterLine:
    name: str  # the store's key (links use it)
    shown: str
    status: str
    infra: str
    resources: str
    num_nodes: int
    autostop: str
    hourly: float  # the whole cluster's, as recorded at apply
    launched_at: float | None
    plan_digest: str

    @property
    def uptime(self) -> float | None:
        return None if self.launched_at is None else max(0.0, time.time() - self.launched_at)


def _resources(offer: dict) -> str:
    parts = [_text(offer, "instance_type") or "-"]
    accel, count = _text(offer, "accelerator"), _num(offer, "accelerator_count")
    if accel:
        parts.append(f"{accel}:{count:g}" if count else accel)
    vcpus, mem = _num(offer, "vcpus"), _num(offer, "memory_gib")
    if vcpus is not None or mem is not None:
        parts.append(f"{vcpus or 0:g} vCPU, {mem or 0:g} GiB")
    if offer.get("spot") is True:
        parts.append("spot")
    return " · ".join(parts)


def _autostop(spec: dict) -> str:
    setting = spec.get("autostop")
    if not isinstance(setting, dict):
        return "-"
    stop, down = _num(setting, "stop_after"), _num(setting, "down_after")
    if stop is None and down is None:
        return "-"
    if stop is None:
        return f"{down:g}m (down)"
    return f"{stop:g}m" + ("" if down is None else f" (down {down:g}m)")


def cluster_line(name: str, text: str) -> ClusterLine:
    record = _loads(text)
    spec = _dict(record.get("spec"))
    offer = _dict(spec.get("offer"))
    nodes = spec.get("num_nodes")
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else 1
    infra = infra_path(
        _text(offer, "cloud", "?"),
        _text(offer, "region", "?"),
        _text(offer, "zone") or None,
        _text(offer, "context") or None,
    )
    return ClusterLine(
        name=name,
        shown=_text(spec, "shown_as") or name,
        status=_text(record, "status", "?"),
        infra=infra,
        resources=_resources(offer),
        num_nodes=nodes,
        autostop=_autostop(spec),
        hourly=(_num(record, "hourly_price") or 0.0) * nodes,
        launched_at=_num(record, "launched_at"),
        plan_digest=_text(record, "plan_digest"),
    )


def cluster_counts(db: StateDB) -> dict[str, int]:
    return {
        s: n for s, n in db.execute_tuples("SELECT status, COUNT(*) FROM clusters GROUP BY status")
    }


def clusters_page(db: StateDB, number: int) -> tuple[list[ClusterLine], Page]:
    rows, page = _paged(db, number, "clusters", "name, record", "name")
    return [cluster_line(name, text) for name, text in rows], page


@dataclass(frozen=True)
class NodeLine:
    rank: int
    host: str
    port: int
    node_id: str


def cluster_nodes(db: StateDB, name: str) -> list[NodeLine]:
    rows = db.execute_tuples(
        "SELECT rank, host, port, node_id FROM nodes WHERE cluster=? ORDER BY rank", (name,)
    )
    return [NodeLine(int(r), str(h), int(p), str(n)) for r, h, p, n in rows]


@dataclass(frozen=True)
class JobLine:
    cluster: str
    job_id: int
    name: str
    status: str
    submitted_at: float | None
    started_at: float | None
    ended_at: float | None
    resources: str
    managed_job_id: int | None
    recoveries: int
    reason: str

    @property
    def duration(self) -> float | None:
        if self.started_at is None:
            return None
        return max(0.0, (self.ended_at or time.time()) - self.started_at)


def job_line(cluster: str, job_id: int, text: str) -> JobLine:
    record = _loads(text)
    managed = _num(record, "managed_job_id")
    return JobLine(
        cluster=cluster,
        job_id=int(job_id),
        name=_text(record, "name"),
        status=_text(record, "status", "?"),
        submitted_at=_num(record, "submitted_at"),
        started_at=_num(record, "started_at"),
        ended_at=_num(record, "ended_at"),
        resources=_text(record, "resources"),
        managed_job_id=None if managed is None else int(managed),
        recoveries=int(_num(record, "recovery_count") or 0),
        reason=_text(record, "reason"),
    )


def jobs_page(db: StateDB, number: int, cluster: str | None = None) -> tuple[list[JobLine], Page]:
    where, args = ("jobs WHERE cluster=?", (cluster,)) if cluster is not None else ("jobs", ())
    rows, page = _paged(db, number, where, "cluster, job_id, record", "cluster, job_id DESC", args)
    return [job_line(c, j, t) for c, j, t in rows], page


def job_counts(db: StateDB) -> dict[str, int]:
    return {s: n for s, n in db.execute_tuples("SELECT status, COUNT(*) FROM jobs GROUP BY status")}


@dataclass(frozen=True)
class ManagedJobLine:
    job_id: int
    name: str
    status: str
    submitted_at: float | None
    ended_at: float | None
    recoveries: int
    cluster: str
    failure: str


def managed_line(job_id: int, text: str) -> ManagedJobLine:
    record = _loads(text)
    tasks = _list(record.get("tasks"))
    recoveries = sum(int(_num(t, "recoveries") or 0) for t in tasks)
    cluster = next((_text(t, "cluster") for t in tasks if _text(t, "cluster")), "")
    return ManagedJobLine(
        job_id=int(job_id),
        name=_text(record, "name"),
        status=_text(record, "status", "?"),
        submitted_at=_num(record, "submitted_at"),
        ended_at=_num(record, "ended_at"),
        recoveries=recoveries,
        cluster=cluster,
        failure=_text(record, "reason"),
    )


def managed_page(db: StateDB, number: int) -> tuple[list[ManagedJobLine], Page]:
    rows, page = _paged(db, number, "managed_jobs", "id, record", "id DESC")
    return [managed_line(i, t) for i, t in rows], page


def managed_revisions(db: StateDB, job_id: int) -> list[Revision]:
    return Revisions(db).list(job_owner(job_id))


def recent_revisions(db: StateDB, limit: int = PAGE_SIZE) -> list[Revision]:
    """The newest plan revisions of managed jobs and services alike, in one query."""
    return Revisions(db).recent(limit)


def managed_owner(db: StateDB, cluster: str) -> ManagedJobLine | None:
    """The unfinished managed job whose task runs on `cluster`, if any (the plan that made
    it): one query over the unfinished managed jobs only."""
    from skyform.state.managed import ManagedJobStatus

    done = [s.value for s in ManagedJobStatus if s.is_terminal]
    marks = ", ".join("?" for _ in done)
    rows = db.execute_tuples(
        f"SELECT id, record FROM managed_jobs WHERE status NOT IN ({marks}) ORDER BY id", done
    )
    for job_id, text in rows:
        tasks = _loads(text).get("tasks")
        if isinstance(tasks, list) and any(_text(t, "cluster") == cluster for t in tasks):
            return managed_line(job_id, text)
    return None


@dataclass(frozen=True)
class TaskLine:
    index: int
    name: str
    cluster: str
    status: str
    cluster_job_id: int | None
    recoveries: int
    started_at: float | None
    ended_at: float | None


def managed_tasks(text: str) -> list[TaskLine]:
    out = []
    for t in _list(_loads(text).get("tasks")):
        job = _num(t, "cluster_job_id")
        out.append(
            TaskLine(
                index=int(_num(t, "index") or 0),
                name=_text(t, "name"),
                cluster=_text(t, "cluster"),
                status=_text(t, "status", "?"),
                cluster_job_id=None if job is None else int(job),
                recoveries=int(_num(t, "recoveries") or 0),
                started_at=_num(t, "started_at"),
                ended_at=_num(t, "ended_at"),
            )
        )
    return out
