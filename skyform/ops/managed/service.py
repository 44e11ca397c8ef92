"""`skyform controller run`: a long-running controller service for managed jobs.

It registers itself in the state store as the lease `controller/<user@host>:<pid>` (renewed
while it runs) and adopts every unfinished managed job that no controller drives: it takes
the job's lease `managed/<id>` and starts the job's controller process
(`python -m skyform.ops.managed.controller ID`), which takes the lease over (job_lease.py):
the lease is free again only once that controller is gone, and the controller dies with the
service. A job whose controller died is adopted by another service: at once on the same
machine (its pid is gone), within the lease time elsewhere. Two controllers never drive one
job: the lease keeps a second one from starting, and its fencing token refuses the writes of
one that outlived its lease. Several services share the load: each adopts what is free when
it looks.

While any service is registered, `jobs launch` only submits, and `jobs queue` does not start
per-job controllers of its own. A job's task, inputs and plan revisions are in the store
(sealed.py: with SKYFORM_PASSPHRASE), so a service with another SKYFORM_HOME runs and
recovers it; a service skips a job it cannot run (launched without a passphrase elsewhere, or
no passphrase here). Its logs are mirrored under the adopting service's SKYFORM_HOME/jobs,
and into the store (logstore.py, with the passphrase), where `jobs logs` elsewhere reads them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from skyform.ops.managed import jobdir, sealed
from skyform.ops.managed.job_lease import LEASE_HELD, SERVICE_PID, SERVICES, job_lease
from skyform.ops.managed.launch import controller_alive, missing_here
from skyform.state.db import StateDB, open_state
from skyform.state.leases import Lease, lease_ttl
from skyform.state.lock import Renewer
from skyform.state.managed import ManagedJobs
from skyform.state.sqlcore import whoami


def registered(db: StateDB) -> list[Lease]:
    """The controller services alive now."""
    return db.list_leases(SERVICES)


def driver_of(db: StateDB, job_id: int) -> str | None:
    """Which service drives the job (its lease's purpose names it), if any."""
    lease = db.get_lease(job_lease(job_id))
    return lease.purpose if lease else None


def drivers(db: StateDB) -> dict[int, str]:
    """Every job a live service drives, with the service's id (user@host:pid): one query."""
    found: dict[int, str] = {}
    for lease in db.list_leases("managed/"):
        number = lease.name.removeprefix("managed/")
        if number.isdigit():
            found[int(number)] = lease.purpose.removeprefix(SERVICES)
    return found


@dataclass
class Adopted:
    lease: Lease
    proc: subprocess.Popen


def _spawn(job_id: int, lease: Lease) -> subprocess.Popen:
    log = open(jobdir.controller_log(job_id), "ab")  # noqa: SIM115 - handed to the child
    # the controller takes the job's lease over from this service, and dies with it
    handed = {LEASE_HELD: lease.token, SERVICE_PID: str(os.getpid())}
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "skyform.ops.managed.controller", str(job_id)],
            env={**os.environ, **handed},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            close_fds=True,
        )
    finally:
        log.close()


def serve(
    *, poll: float = 2.0, emit: Callable[[str], None], stop: threading.Event | None = None
) -> None:
    """Adopt and drive managed jobs until `stop` is set (or the process is killed)."""
    stop = stop or threading.Event()
    ttl = lease_ttl()
    name = f"{SERVICES}{whoami()}:{os.getpid()}"
    with open_state() as db:
        me = db.try_lease(name, purpose="skyform controller run", ttl=ttl)
        assert me is not None  # the name has our pid in it: nobody else holds it
        renewer = Renewer(db, me, ttl)
        renewer.start()
        emit(f"controller {name.removeprefix(SERVICES)} registered (lease {ttl:g} s)")
        driving: dict[int, Adopted] = {}
        skipped: set[int] = set()  # jobs this service cannot run (said once)
        try:
            while not stop.is_set():
                _reap(db, driving, emit)
                _adopt(db, driving, skipped, name, ttl, emit)
                for job in driving.values():  # until its controller has taken it over
                    db.renew_lease(job.lease, ttl)
                stop.wait(min(poll, ttl / 3))
        finally:
            for job in driving.values():
                job.proc.terminate()
            renewer.stop()
            db.release_lease(me)


def _reap(db: StateDB, driving: dict[int, Adopted], emit: Callable[[str], None]) -> None:
    for job_id, job in list(driving.items()):
        if job.proc.poll() is None:
            continue
        db.release_lease(job.lease)
        del driving[job_id]
        emit(f"managed job {job_id}: its controller exited ({job.proc.returncode})")


def _adopt(
    db: StateDB,
    driving: dict,
    skipped: set[int],
    name: str,
    ttl: float,
    emit: Callable[[str], None],
) -> None:
    for record in ManagedJobs(db).list():
        if record.status.is_terminal or record.id in driving or controller_alive(record.id):
            continue
        missing = missing_here(record)
        if missing:
            if record.id not in skipped:  # a job launched elsewhere that syncs files from there
                skipped.add(record.id)
                emit(
                    f"managed job {record.id}: it syncs {', '.join(missing)} from the machine "
                    "that launched it, which this one does not have: left to a controller there"
                )
            continue
        if not sealed.runnable_here(db, record.id):
            if record.id not in skipped:  # its inputs are elsewhere only, or need a passphrase
                skipped.add(record.id)
                emit(
                    f"managed job {record.id}: its task and inputs are not here nor readable "
                    "from the store (SKYFORM_PASSPHRASE): left to a controller that can run it"
                )
            continue
        lease = db.try_lease(job_lease(record.id), purpose=name, ttl=ttl)
        if lease is None:
            continue  # another service drives it
        driving[record.id] = Adopted(lease, _spawn(record.id, lease))
        db.add_event(
            "managed.adopted",
            f"controller {name.removeprefix(SERVICES)} adopted managed job {record.id}",
            data={"managed_job_id": record.id, "controller": name},
        )
        emit(f"adopted managed job {record.id} ({record.name})")
