"""Services as the controller service adopts them (controllers/loop.py): every service
whose controller is gone (its lease `service/<name>` free), unless it is going or gone down.

The adopted controller (`python -m skyform.ops.serve.controller NAME`) rebuilds its view from
the service's record, keeps the running load balancer and the healthy replicas
(serve/adoption.py). A service with secrets is adopted only where they can be opened
(serve/sealed.py: sealed into the store with SKYFORM_PASSPHRASE); otherwise it is left to
the controller that has them in memory, and said once.

When this service stops (SIGTERM) or dies, the service controllers it started leave their
services running (SIGHUP: no teardown), for the next controller to adopt.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

from skyform.controllers.lease import LEAVE, service_lease
from skyform.controllers.loop import Emit, Work
from skyform.serve import sealed, state
from skyform.state.db import StateDB

LEFT_ALONE = (
    state.ServiceStatus.SHUTTING_DOWN,
    state.ServiceStatus.FAILED_CLEANUP,
    state.ServiceStatus.CONTROLLER_FAILED,
)


class ServicesKind:
    def __init__(self) -> None:
        self.skipped: set[str] = set()  # services this controller cannot run (said once)

    def candidates(self, db: StateDB, emit: Emit) -> Iterator[Work]:
        for name in state.list_services():
            record = state.read_record(name)
            if record is None or record.status in LEFT_ALONE:
                continue
            if db.get_lease(service_lease(name)) is not None:
                continue  # its controller runs
            why = sealed.cannot_open(db, name)
            if why is not None:
                if name not in self.skipped:
                    self.skipped.add(name)
                    emit(f"service {name}: {why}: left to the controller that started it")
                continue
            yield Work(
                lease=service_lease(name),
                what=f"service {name}",
                argv=("skyform.ops.serve.controller", name),
                # made here when the service was put up from another home sharing the store
                log=state.make_dir(name) / "controller.log",
                event="serve.adopted",
                data={"service": name},
            )

    def stop(self, proc: subprocess.Popen) -> None:
        proc.send_signal(LEAVE)
