"""Managed jobs as the controller service adopts them (controllers/loop.py): every unfinished job no
controller drives, that this machine can run.

A job's task, inputs and plan revisions are in the store (ops/managed/sealed.py: with
SKYFORM_PASSPHRASE), so a service with another SKYFORM_HOME runs and recovers it; a service
skips a job it cannot run (launched without a passphrase elsewhere, or no passphrase here,
or it syncs files only the launching machine has). Its logs are mirrored under the adopting
service's SKYFORM_HOME/jobs, and into the store (logstore.py, with the passphrase), where
`jobs logs` elsewhere reads them.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

from skyform.controllers.lease import SERVICES, job_lease
from skyform.controllers.loop import Emit, Work
from skyform.ops.managed import jobdir, sealed
from skyform.ops.managed.launch import controller_alive, missing_here
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobs


def drivers(db: StateDB) -> dict[int, str]:
    """Every job a live service drives, with the service's id (user@host:pid): one query."""
    found: dict[int, str] = {}
    for lease in db.list_leases("managed/"):
        number = lease.name.removeprefix("managed/")
        if number.isdigit():
            found[int(number)] = lease.purpose.removeprefix(SERVICES)
    return found


class ManagedJobsKind:
    def __init__(self) -> None:
        self.skipped: set[int] = set()  # jobs this service cannot run (said once)

    def candidates(self, db: StateDB, emit: Emit) -> Iterator[Work]:
        for record in ManagedJobs(db).list():
            if record.status.is_terminal or controller_alive(record.id):
                continue
            missing = missing_here(record)
            if missing:
                if record.id not in self.skipped:  # launched elsewhere, syncs files from there
                    self.skipped.add(record.id)
                    emit(
                        f"managed job {record.id}: it syncs {', '.join(missing)} from the "
                        "machine that launched it, which this one does not have: left to a "
                        "controller there"
                    )
                continue
            if not sealed.runnable_here(db, record.id):
                if record.id not in self.skipped:  # inputs elsewhere only, or need a passphrase
                    self.skipped.add(record.id)
                    emit(
                        f"managed job {record.id}: its task and inputs are not here nor "
                        "readable from the store (SKYFORM_PASSPHRASE): left to a controller "
                        "that can run it"
                    )
                continue
            yield Work(
                lease=job_lease(record.id),
                what=f"managed job {record.id} ({record.name})",
                argv=("skyform.ops.managed.controller", str(record.id)),
                log=jobdir.controller_log(record.id),
                event="managed.adopted",
                data={"managed_job_id": record.id},
            )

    def stop(self, proc: subprocess.Popen) -> None:
        proc.terminate()
