"""A service's controller process: `python -m skyform.ops.serve.controller NAME`, as a managed
job's is `python -m skyform.ops.managed.controller ID`.

`serve up` starts it (ops/serve/service.py), or a `skyform controller run` service adopts the
service and starts it with the lease handed over (serve/adoptable.py). It holds the
service's lease `service/<name>` (fenced: a controller that lost it stops without tearing
anything down) and runs serve/controller.py's ServiceController with skyform's own verbs
for the replicas' clusters (replica_clusters.py).
"""

from __future__ import annotations

import asyncio
import logging
import sys

from skyform.controllers.lease import LEAVE, die_with_service, holding, service_lease
from skyform.errors import Fenced, SkyformError
from skyform.ops.serve.replica_clusters import AppliedClusters
from skyform.serve import state
from skyform.serve.controller import ServiceController

log = logging.getLogger("skyform.serve.controller")


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    name = argv[0]
    if not die_with_service(LEAVE):
        log.info("the service that started the controller of %s is gone; exiting", name)
        return 0
    with holding(service_lease(name)) as db:
        if db is None:
            log.error("another controller runs service %s", name)
            return 1
        try:
            asyncio.run(ServiceController(name, AppliedClusters(), db).run())
        except Fenced as stop:  # another controller drives the service now: nothing more
            log.info("service %s: %s", name, stop.message)  # from here
        except SkyformError as exc:
            log.error("%s", exc.message)
            record = state.read_record(name)
            if record is not None:
                failed = {"status": state.ServiceStatus.CONTROLLER_FAILED, "reason": exc.message}
                state.write_record(record.model_copy(update=failed))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
