"""The dashboard's routes: each reads what its page shows (bounded queries, reads.py) in a
worker thread so log streams keep flowing, then renders a template."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from skyform.ops.dashboard import actions, charts, reads, services_data, streams
from skyform.ops.dashboard.rendering import GUARD, render


def _page(request: web.Request) -> int:
    text = request.query.get("page", "1")
    return int(text) if text.isdigit() else 1


def _store(read: Callable[[Any], dict]) -> dict:
    """`read(db)` against the state store, or an empty page when there is none yet."""
    from skyform.state.db import open_state, state_exists

    if not state_exists():
        return read(None)
    with open_state() as db:
        return read(db)


async def _in_thread(read: Callable[[Any], dict]) -> dict:
    return await asyncio.to_thread(_store, read)


async def clusters(request: web.Request) -> web.Response:
    number = _page(request)

    def read(db) -> dict:
        if db is None:
            return {"clusters": [], "page": reads.page_of(1, 0), "counts": {}}
        lines, page = reads.clusters_page(db, number)
        return {"clusters": lines, "page": page, "counts": reads.cluster_counts(db)}

    return render(request, "clusters.html", **await _in_thread(read))


def _not_found(what: str) -> web.HTTPNotFound:
    return web.HTTPNotFound(text=f"no {what}", content_type="text/plain")


async def cluster(request: web.Request) -> web.Response:
    name, number = request.match_info["name"], _page(request)

    def read(db) -> dict:
        rows = db.execute_tuples("SELECT record FROM clusters WHERE name=?", (name,)) if db else []
        if not rows:
            raise _not_found("such cluster")
        jobs, page = reads.jobs_page(db, number, cluster=name)
        managed = reads.managed_owner(db, name)
        return {
            "c": reads.cluster_line(name, rows[0][0]),
            "nodes": reads.cluster_nodes(db, name),
            "jobs": jobs,
            "page": page,
            "owner": managed,
            "revisions": reads.managed_revisions(db, managed.job_id) if managed else [],
        }

    return render(request, "cluster.html", **await _in_thread(read))


async def jobs(request: web.Request) -> web.Response:
    number = _page(request)

    def read(db) -> dict:
        if db is None:
            return {"jobs": [], "page": reads.page_of(1, 0), "counts": {}}
        lines, page = reads.jobs_page(db, number)
        return {"jobs": lines, "page": page, "counts": reads.job_counts(db)}

    return render(request, "jobs.html", **await _in_thread(read))


async def job(request: web.Request) -> web.Response:
    name, job_id = request.match_info["name"], _job_id(request)

    def read(db) -> dict:
        rows = (
            db.execute_tuples(
                "SELECT record FROM jobs WHERE cluster=? AND job_id=?", (name, job_id)
            )
            if db
            else []
        )
        if not rows:
            raise _not_found("such job")
        return {"j": reads.job_line(name, job_id, rows[0][0])}

    return render(request, "job.html", **await _in_thread(read))


def _job_id(request: web.Request) -> int:
    text = request.match_info["job"]
    if not text.isdigit():
        raise _not_found("such job")
    return int(text)


async def job_log(request: web.Request) -> web.StreamResponse:
    """A cluster job's output while it runs (`skyform logs -f`'s path)."""
    from skyform.ops.cluster_jobs import logs_of

    name, job_id = request.match_info["name"], _job_id(request)

    def follow(line: Callable[[str], None]) -> str:
        def on_log(log_line) -> None:
            line(("[setup] " if log_line.setup else "") + log_line.text)

        result = logs_of(name, job_id, follow=True, node=None, on_log=on_log)
        for note in [*result.notes, *result.warnings]:
            line(note)
        return result.job.status.value

    return await streams.events(request, follow, f"log {name} {job_id}")


async def managed_log(request: web.Request) -> web.StreamResponse:
    """A managed job's output across its recoveries (`skyform jobs logs -f`'s path)."""
    from skyform.ops.managed.verbs import follow_output

    job_id = _managed_id(request)

    def follow(line: Callable[[str], None]) -> str:
        record = follow_output(
            job_id, follow=True, on_line=lambda m: line(f"({m.task}) {m.text}"), on_note=line
        )
        return record.status.value

    return await streams.events(request, follow, f"managed log {job_id}")


async def managed(request: web.Request) -> web.Response:
    number = _page(request)

    def read(db) -> dict:
        if db is None:
            return {"jobs": [], "page": reads.page_of(1, 0)}
        lines, page = reads.managed_page(db, number)
        return {"jobs": lines, "page": page}

    return render(request, "managed.html", **await _in_thread(read))


def _managed_id(request: web.Request) -> int:
    text = request.match_info["id"]
    if not text.isdigit():
        raise _not_found("such managed job")
    return int(text)


async def managed_job(request: web.Request) -> web.Response:
    job_id = _managed_id(request)

    def read(db) -> dict:
        rows = (
            db.execute_tuples("SELECT id, record FROM managed_jobs WHERE id=?", (job_id,))
            if db
            else []
        )
        if not rows:
            raise _not_found("such managed job")
        return {
            "m": reads.managed_line(*rows[0]),
            "tasks": reads.managed_tasks(rows[0][1]),
            "revisions": reads.managed_revisions(db, job_id),
        }

    return render(request, "managed_job.html", **await _in_thread(read))


async def revision(request: web.Request) -> web.Response:
    from skyform.ops.dashboard.plan_view import plan_view
    from skyform.plan.planfile import parse_plan
    from skyform.state.revisions import Revisions

    job_id = _managed_id(request)
    number = request.match_info["rev"]
    if not number.isdigit():
        raise _not_found("such revision")

    def read(db) -> dict:
        revs = reads.managed_revisions(db, job_id) if db else []
        found = [r for r in revs if r.revision == int(number)]
        data = Revisions(db).body(found[0]) if found else None
        if data is None:
            raise _not_found("such revision")
        plan = parse_plan(data, f"managed job {job_id} revision {number}")
        return {"job_id": job_id, "rev": found[0], "view": plan_view(plan)}

    return render(request, "revision.html", **await _in_thread(read))


async def plans(request: web.Request) -> web.Response:
    def read(db) -> dict:
        # both kinds, one query: managed jobs' plans and services' replica sets
        return {"revisions": reads.recent_revisions(db) if db else []}

    return render(request, "plans.html", **await _in_thread(read))


async def services(request: web.Request) -> web.Response:
    records = await asyncio.to_thread(services_data.services)
    return render(request, "services.html", services=records)


def _service(request: web.Request):
    record = services_data.service(request.match_info["name"])
    if record is None:
        raise _not_found("such service")
    return record


async def service(request: web.Request) -> web.Response:
    record = await asyncio.to_thread(_service, request)
    revs = await asyncio.to_thread(services_data.revisions, record.name)
    rows = await asyncio.to_thread(services_data.windows, record.name)
    return render(
        request,
        "service.html",
        s=record,
        revisions=revs[-20:],
        rps=charts.line(services_data.requests_per_second(rows)),
        rps_total=sum(w.requests for w in rows),
        latency=charts.line(services_data.latency_ms(rows, "p50")),
        latency95=charts.line(services_data.latency_ms(rows, "p95")),
    )


async def service_series(request: web.Request) -> web.Response:
    record = await asyncio.to_thread(_service, request)
    rows = await asyncio.to_thread(services_data.windows, record.name)
    body = {
        "rps": charts.line(services_data.requests_per_second(rows)).__dict__,
        "rps_total": sum(w.requests for w in rows),
        "latency": charts.line(services_data.latency_ms(rows, "p50")).__dict__,
        "latency95": charts.line(services_data.latency_ms(rows, "p95")).__dict__,
        "replicas": [{"id": r.replica_id, "status": r.status} for r in record.replicas],
    }
    return web.json_response(body)


async def cost(request: web.Request) -> web.Response:
    from skyform.ops.cost import usage
    from skyform.ops.dashboard import cost_view

    text = request.query.get("days", "30")
    days = float(text) if text.replace(".", "", 1).isdigit() else 30.0
    report = await asyncio.to_thread(usage, days)
    return render(
        request,
        "cost.html",
        report=report,
        days=days,
        by_cluster=charts.bars(cost_view.per_cluster(report)[:30], " $"),
        by_day=charts.bars(cost_view.per_day(report), " $"),
    )


async def confirm(request: web.Request) -> web.Response:
    if not request.app[GUARD].allow_actions:
        raise web.HTTPForbidden(text="Read-only: start the dashboard with --allow-actions.")
    action = actions.describe(request.match_info["kind"], dict(request.query))
    return render(request, "confirm.html", action=action)


async def act(request: web.Request) -> web.Response:
    form = await request.post()
    if not request.app[GUARD].csrf_ok(str(form.get("csrf", ""))):
        raise web.HTTPForbidden(text="The form's CSRF token does not match: reload the page.")
    params = {k: str(v) for k, v in form.items() if k != "csrf"}
    action = actions.describe(request.match_info["kind"], params)
    outcome = await asyncio.to_thread(actions.perform, action)
    return render(request, "done.html", outcome=outcome)


async def home(_request: web.Request) -> web.Response:
    raise web.HTTPFound("/clusters")


def add_routes(app: web.Application) -> None:
    r = app.router
    r.add_get("/", home)
    r.add_get("/clusters", clusters)
    r.add_get("/clusters/{name}", cluster)
    r.add_get("/clusters/{name}/jobs/{job}", job)
    r.add_get("/clusters/{name}/jobs/{job}/log", job_log)
    r.add_get("/jobs", jobs)
    r.add_get("/managed", managed)
    r.add_get("/managed/{id}", managed_job)
    r.add_get("/managed/{id}/log", managed_log)
    r.add_get("/managed/{id}/revisions/{rev}", revision)
    r.add_get("/plans", plans)
    r.add_get("/services", services)
    r.add_get("/services/{name}", service)
    r.add_get("/api/services/{name}/series", service_series)
    r.add_get("/cost", cost)
    r.add_get("/actions/{kind}", confirm)
    r.add_post("/actions/{kind}", act)
