"""The controllers of managed jobs and services, and the service that adopts them.

    skyform controller run ── loop.serve: lease controller/<user@host:pid>
      │  every look, for each kind (jobs.ManagedJobsKind, services.ServicesKind):
      │    free work (its lease managed/<id> · service/<name> not held) → take the lease,
      │    spawn its controller with the lease handed over (lease.LEASE_HELD)
      ├─ python -m skyform.ops.managed.controller ID   (lease.hold: renewed + fenced)
      └─ python -m skyform.serve.controller NAME       (lease.hold: renewed + fenced)
            └─ load balancer (own session: outlives it; serve/lb_process.py)

A controller dies with the service that started it (parent-death signal: a job controller
gets SIGTERM, a service controller lease.LEAVE, leaving its service running); its lease
is then free at once on this machine, within SKYFORM_LEASE_TTL elsewhere, and the next
look of any controller service adopts the work. A controller that lost its lease is refused
its writes (state/fencing.py) and stops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyform.controllers.loop import Kind


def every_kind() -> list[Kind]:
    from skyform.controllers.jobs import ManagedJobsKind
    from skyform.controllers.services import ServicesKind

    return [ManagedJobsKind(), ServicesKind()]
