"""What the `jobs` verbs call (launch, queue, logs, cancel, plans), each on this machine's
state store. Every one of them first starts again the controller of any managed job whose
controller died (single-user mode; team mode has the controller service adopt it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from skyform.errors import SkyformError
from skyform.ops.managed.launch import controller_alive, ensure_controllers
from skyform.plan.model import Plan
from skyform.spec.inputs import TaskInputs
from skyform.state.db import StateDB, open_state
from skyform.state.managed import ManagedJobRecord, ManagedJobs
from skyform.state.revisions import Revision, Revisions, job_owner


@contextmanager
def _open() -> Iterator[tuple[StateDB, list[int]]]:
    """The store, and the managed jobs whose dead controller was started again."""
    with open_state() as db:
        yield db, ensure_controllers(db)


@dataclass(frozen=True)
class Launched:
    record: ManagedJobRecord
    services: list[str] = field(default_factory=list)  # controller services that will run it
    team_store: bool = False  # the store is shared (not this machine's SQLite file)
    inputs_shared: bool = False  # its task and inputs are in the store (sealed.py)
    # a controller was started here although services are registered: the job syncs files
    # only this machine has (its workdir, local file-mount sources)
    local_controller: bool = False


def launch(
    target: Path,
    *,
    from_plan: bool,
    inputs: TaskInputs,
    strategy: str | None,
    max_restarts: int | None,
    objective: str,
    name: str | None,
) -> Launched:
    """`jobs launch TASK.yaml` (planned now) or `jobs launch PLAN.json` (a reviewed plan)."""
    from skyform.ops.managed import launch as launching

    if from_plan:  # as apply does, before the store is opened: a refusal leaves nothing
        from skyform.ops.taskfile import check_saved_plan

        check_saved_plan(target, secret_overrides=list(inputs.secrets))

    with _open() as (db, _):
        if from_plan:
            record = launching.launch_plan(
                db,
                target,
                secret_overrides=list(inputs.secrets),
                strategy=strategy,
                max_restarts=max_restarts,
                name=name,
            )
        else:
            record = launching.launch(
                db,
                target,
                inputs=inputs,
                strategy=strategy,
                max_restarts=max_restarts,
                objective=objective,
                name=name,
            )
        services = [
            lease.name.removeprefix("controller/") for lease in db.list_leases("controller/")
        ]
        from skyform.ops.managed.sealed import shared

        inputs_shared = shared(db, record.id)
    return Launched(
        record,
        services,
        team_store=db.kind != "sqlite",
        inputs_shared=inputs_shared,
        local_controller=bool(services and record.local_paths),
    )


@dataclass(frozen=True)
class Queue:
    records: list[ManagedJobRecord]
    restarted: list[int]  # jobs whose dead controller was started again
    drivers: dict[int, str]  # job id -> the controller service driving it (user@host:pid)


def queue() -> Queue:
    """Every managed job, which controller service drives each, and those whose dead
    controller was started again."""
    from skyform.ops.managed.adoptable import drivers

    with _open() as (db, restarted):
        return Queue(ManagedJobs(db).list(), restarted, drivers(db))


def follow_output(job_id: int, *, follow: bool, on_line, on_note) -> ManagedJobRecord:
    """The job's output so far (following: until it ends) through the sinks; its record."""
    from skyform.ops.managed.logs import stream

    if follow:  # the controllers were seen to already (following can take hours)
        with open_state() as db:
            return stream(db, job_id, follow=True, on_line=on_line, on_note=on_note)
    with _open() as (db, _):
        return stream(db, job_id, follow=False, on_line=on_line, on_note=on_note)


def require(job_id: int) -> ManagedJobRecord:
    with _open() as (db, _):
        return ManagedJobs(db).require(job_id)


def controller_log_chunks(job_id: int, *, follow: bool) -> Iterator[bytes]:
    """The job's controller log; with `follow`, what the controller appends to it until the
    job ends (as `sky jobs logs --controller` does)."""
    from skyform.ops.logfiles import appended
    from skyform.ops.managed import jobdir

    require(job_id)
    with open(jobdir.controller_log(job_id), "rb") as fh:
        yield fh.read()
        if follow:
            yield from appended(fh, over=lambda: _controller_done(job_id))


def _controller_done(job_id: int) -> bool:
    """The job has ended and its controller has exited: it writes its last lines (the
    teardown) after the job's end."""
    with open_state() as db:
        status = ManagedJobs(db).require(job_id).status
    return status.is_terminal and not controller_alive(job_id)


def cancel(job_ids: list[int] | None) -> list[ManagedJobRecord]:
    """Cancel them (None: every unfinished one); their controllers tear the clusters down."""
    from skyform.ops.managed.cancel import cancel_jobs

    with _open() as (db, _):
        return cancel_jobs(db, job_ids)


def revisions(job_id: int) -> list[Revision]:
    """The job's plan revisions, one per (re-)plan."""
    with _open() as (db, _):
        ManagedJobs(db).require(job_id)
        return Revisions(db).list(job_owner(job_id))


def revision_plan(job_id: int, found: list[Revision], number: int) -> Plan:
    """Revision `number` as a plan (read back as untrusted, as any saved plan)."""
    from skyform.ops.managed.sealed import revision_plan as read_revision

    chosen = [r for r in found if r.revision == number]
    if not chosen:
        raise SkyformError(f"managed job {job_id} has revisions 1..{len(found)}, not {number}")
    with open_state() as db:
        plan, _ = read_revision(db, chosen[0])
    return plan
