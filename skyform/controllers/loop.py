"""`skyform controller run`: the long-running controller service, for managed jobs and
services alike (the kinds: jobs.py, services.py).

It registers itself in the state store as the lease `controller/<user@host>:<pid>` (renewed
while it runs) and, at every look, adopts each piece of work of each kind that no
controller drives: it takes the work's lease (`managed/<id>`, `service/<name>`) and starts
its controller process, which takes the lease over (lease.py): the lease is free again only
once that controller is gone, and the controller dies with the service. Work whose
controller died is adopted by another service: at once on the same machine (its pid is
gone), within the lease time elsewhere. Two controllers never drive one piece of work: the
lease keeps a second one from starting, and its fencing token refuses the writes of one that
outlived its lease. Several services share the load: each adopts what is free when it looks.

While any service is registered, `jobs launch` and `serve up` only record their work, and
`jobs queue` does not start per-job controllers of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from skyform.controllers.lease import LEASE_HELD, SERVICE_PID, SERVICES
from skyform.state.db import StateDB, open_state
from skyform.state.leases import Lease, lease_ttl
from skyform.state.lock import Renewer
from skyform.state.sqlcore import whoami

Emit = Callable[[str], None]


@dataclass(frozen=True)
class Work:
    """One piece of work a kind offers for adoption."""

    lease: str  # managed/3, service/web
    what: str  # how the service's output names it: "managed job 3 (train)"
    argv: Sequence[str]  # its controller: `python -m ...` arguments
    log: Path  # where its controller's output goes
    event: str  # the store event recorded when it is adopted
    data: dict[str, object] = field(default_factory=dict)  # the event's data


class Kind(Protocol):
    def candidates(self, db: StateDB, emit: Emit) -> Iterable[Work]:
        """The work that no controller drives and this machine can run."""
        ...

    def stop(self, proc: subprocess.Popen) -> None:
        """Stop a controller this service started, as the service itself stops."""
        ...


def registered(db: StateDB) -> list[Lease]:
    """The controller services alive now."""
    return db.list_leases(SERVICES)


@dataclass
class Adopted:
    lease: Lease
    proc: subprocess.Popen
    kind: Kind
    what: str


def _spawn(work: Work, lease: Lease) -> subprocess.Popen:
    log = open(work.log, "ab")  # noqa: SIM115 - handed to the child
    # the controller takes the lease over from this service, and dies with it
    handed = {LEASE_HELD: lease.token, SERVICE_PID: str(os.getpid())}
    try:
        return subprocess.Popen(
            [sys.executable, "-m", *work.argv],
            env={**os.environ, **handed},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            close_fds=True,
        )
    finally:
        log.close()


def serve(
    kinds: Sequence[Kind],
    *,
    poll: float = 2.0,
    emit: Emit,
    stop: threading.Event | None = None,
) -> None:
    """Adopt and drive the kinds' work until `stop` is set (or the process is killed)."""
    stop = stop or threading.Event()
    ttl = lease_ttl()
    name = f"{SERVICES}{whoami()}:{os.getpid()}"
    with open_state() as db:
        me = db.try_lease(name, purpose="skyform controller run", ttl=ttl)
        assert me is not None  # the name has our pid in it: nobody else holds it
        renewer = Renewer(db, me, ttl)
        renewer.start()
        emit(f"controller {name.removeprefix(SERVICES)} registered (lease {ttl:g} s)")
        driving: dict[str, Adopted] = {}
        try:
            while not stop.is_set():
                _reap(db, driving, emit)
                for kind in kinds:
                    adopt(db, kind, driving, name, ttl, emit)
                for held in driving.values():  # until its controller has taken it over
                    db.renew_lease(held.lease, ttl)
                stop.wait(min(poll, ttl / 3))
        finally:
            for held in driving.values():
                held.kind.stop(held.proc)
            renewer.stop()
            db.release_lease(me)


def _reap(db: StateDB, driving: dict[str, Adopted], emit: Emit) -> None:
    for key, held in list(driving.items()):
        if held.proc.poll() is None:
            continue
        db.release_lease(held.lease)
        del driving[key]
        emit(f"{held.what}: its controller exited ({held.proc.returncode})")


def adopt(
    db: StateDB, kind: Kind, driving: dict[str, Adopted], name: str, ttl: float, emit: Emit
) -> None:
    """Take the lease of each of the kind's free work and start its controller."""
    for work in kind.candidates(db, emit):
        if work.lease in driving:
            continue
        lease = db.try_lease(work.lease, purpose=name, ttl=ttl)
        if lease is None:
            continue  # another service drives it
        driving[work.lease] = Adopted(lease, _spawn(work, lease), kind, work.what)
        who = name.removeprefix(SERVICES)
        db.add_event(
            work.event,
            f"controller {who} adopted {work.what}",
            data={**work.data, "controller": name},
        )
        emit(f"adopted {work.what}")
