"""A controller's lease: one controller drives a managed job (`managed/<id>`) or a service
(`service/<name>`), and only its writes count.

The controller holds the lease itself (its pid, renewed while it runs) and fences its
process with the lease's fencing token (state/fencing.py). A controller started by a
`skyform controller run` service is handed the lease the service took to adopt the job or
service; one started by `jobs launch`, `jobs queue` or `serve up` takes it. So the lease is
free only once the controller is gone: at once on its own machine (its pid is gone), at
expiry elsewhere (SKYFORM_LEASE_TTL) — never because the service that started it died. The
controller dies with that service (Linux: the parent-death signal), and should one survive
anyway (frozen, cut off), the next holder's newer token refuses its writes and it stops.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
from collections.abc import Iterator

from skyform.errors import Fenced, SkyformError
from skyform.state.db import StateDB, open_state
from skyform.state.fencing import Fence, fence_process
from skyform.state.leases import lease_ttl
from skyform.state.lock import Renewer
from skyform.state.revisions import job_owner, service_owner
from skyform.state.sqlcore import whoami

SERVICES = "controller/"
# set for the controllers a service starts: the token of the lease it took, and the
# service's pid (the controller dies with it)
LEASE_HELD = "SKYFORM_JOB_LEASE_HELD"
SERVICE_PID = "SKYFORM_JOB_SERVICE_PID"
PR_SET_PDEATHSIG = 1
# a service controller that gets it stops driving its service and tears nothing down (its
# load balancer and replicas keep serving, for the next controller to adopt)
LEAVE = signal.SIGHUP


def job_lease(job_id: int) -> str:
    return job_owner(job_id)  # its plan revisions' owner: one name for the work


def service_lease(name: str) -> str:
    return service_owner(name)


def hold(name: str) -> Renewer | None:
    """This process's hold on the lease `name`: handed over by the service that started
    it, or taken now; renewed until stopped, and this process fenced with its token. None:
    another controller holds it (or the service lost the lease meanwhile)."""
    db = open_state()
    ttl = lease_ttl()
    handed = os.environ.get(LEASE_HELD)
    if handed:
        lease = db.hand_over(name, handed, ttl=ttl)
    else:
        purpose = f"{SERVICES}{whoami()}:{os.getpid()}"
        lease = db.try_lease(name, purpose=purpose, ttl=ttl)
    if lease is None:
        db.close()
        return None
    fence_process(Fence(lease.name, lease.fence))
    renewer = Renewer(db, lease, ttl)
    renewer.start()
    return renewer


@contextlib.contextmanager
def holding(name: str) -> Iterator[StateDB | None]:
    """`hold` the lease for the block (its store, where the process is fenced; None:
    another controller holds it), then give it up."""
    renewer = hold(name)
    if renewer is None:
        yield None
        return
    try:
        yield renewer.store
    finally:
        renewer.stop()
        with contextlib.suppress(Fenced, SkyformError):  # lost meanwhile: not ours to drop
            renewer.store.release_lease(renewer.lease)
        renewer.store.close()


def die_with_service(signum: int = signal.SIGTERM) -> bool:
    """A controller a service started ends when that service does, even by `kill -9`
    (Linux's parent-death signal, `signum`). False: the service is gone already."""
    service = os.environ.get(SERVICE_PID)
    if not service:
        return True
    path = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(path, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: a surviving controller is still stopped by its lease's fence
    return os.getppid() == int(service)
