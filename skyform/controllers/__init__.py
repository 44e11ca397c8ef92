"""What the controllers of managed jobs and services share: the adoption loop of the
controller service (loop.py) and the lease a controller holds (lease.py). Each kind's part
lives with its subsystem: ops/managed/adoptable.py and ops/managed/controller.py for jobs,
serve/adoptable.py and serve/controller.py (entry: ops/serve/controller.py) for services.

    skyform controller run ── loop.serve: lease controller/<user@host:pid>
      │  every look, for each kind (ManagedJobsKind, ServicesKind):
      │    free work (its lease managed/<id> · service/<name> not held) → take the lease,
      │    spawn its controller with the lease handed over (lease.LEASE_HELD)
      ├─ python -m skyform.ops.managed.controller ID   (lease.hold: renewed + fenced)
      └─ python -m skyform.ops.serve.controller NAME    (lease.hold: renewed + fenced)
            └─ load balancer (own session: outlives it; serve/lb_process.py)

A controller dies with the service that started it (parent-death signal: a job controller
gets SIGTERM, a service controller lease.LEAVE, leaving its service running); its lease
is then free at once on this machine, within SKYFORM_LEASE_TTL elsewhere, and the next
look of any controller service adopts the work. A controller that lost its lease is refused
its writes (state/fencing.py) and stops.
"""
