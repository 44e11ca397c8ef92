"""A managed job's lease, `managed/<id>`: one controller drives a job, and only its writes
count.

The controller holds the lease itself (its pid, renewed while it runs) and fences its
process with the lease's fencing token (state/fencing.py). A controller started by a
`skyform controller run` service is handed the lease the service took to adopt the job; one
started by `jobs launch` or `jobs queue` takes it. So the lease is free only once the
controller is gone: at once on its own machine (its pid is gone), at expiry elsewhere
(SKYFORM_LEASE_TTL) — never because the service that started it died. The controller dies
with that service (Linux: the parent-death signal), and should one survive anyway (frozen,
cut off), the next holder's newer token refuses its writes and it stops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal

from skyform.state.db import open_state
from skyform.state.fencing import Fence, fence_process
from skyform.state.leases import lease_ttl
from skyform.state.lock import Renewer
from skyform.state.sqlcore import whoami

SERVICES = "controller/"
# set for the job controllers a service starts: the token of the job's lease it took, and
# the service's pid (the controller dies with it)
LEASE_HELD = "SKYFORM_JOB_LEASE_HELD"
SERVICE_PID = "SKYFORM_JOB_SERVICE_PID"
PR_SET_PDEATHSIG = 1


def job_lease(job_id: int) -> str:
    return f"managed/{job_id}"


def drive(job_id: int) -> Renewer | None:
    """This process's hold on the job: the lease handed over by the service that started
    it, or taken now; renewed until stopped, and this process fenced with its token. None:
    another controller drives the job (or the service lost the lease meanwhile)."""
    db = open_state()
    ttl = lease_ttl()
    handed = os.environ.get(LEASE_HELD)
    if handed:
        lease = db.hand_over(job_lease(job_id), handed, ttl=ttl)
    else:
        purpose = f"{SERVICES}{whoami()}:{os.getpid()}"
        lease = db.try_lease(job_lease(job_id), purpose=purpose, ttl=ttl)
    if lease is None:
        db.close()
        return None
    fence_process(Fence(lease.name, lease.fence))
    renewer = Renewer(db, lease, ttl)
    renewer.start()
    return renewer


def die_with_service() -> bool:
    """A controller a service started ends when that service does, even by `kill -9`
    (Linux's parent-death signal: SIGTERM). False: the service is gone already."""
    service = os.environ.get(SERVICE_PID)
    if not service:
        return True
    path = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(path, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: a surviving controller is still stopped by its lease's fence
    return os.getppid() == int(service)
