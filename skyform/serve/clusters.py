"""What the service controller asks of a replica's cluster: plan where it goes, launch it
the way a managed job's cluster is launched (lifecycle/driven.py), tear it down, read its
job's end and log. Those are skyform's use cases (`ops/`), so the caller that starts the controller
hands them in (ops/serve/replica_clusters.py) and `serve` never imports `ops`: the service
subsystem sits below the verbs, as `lifecycle/` does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from skyform.exec.results import LogLine
    from skyform.serve.replica_launch import ReplicaInputs
    from skyform.state.models import JobRecord

Log = Callable[[str], None]


class ReplicaClusters(Protocol):
    def planned_infra(self, inputs: ReplicaInputs, task: Path, cluster: str) -> str:
        """Where the optimizer puts the replica (`local`, `ssh/lab/zone-a`, `aws/...`)."""
        ...

    def launch(
        self,
        inputs: ReplicaInputs,
        task: Path,
        cluster: str,
        log: Log,
        *,
        port: int,
        reason: str,
        one_at_a_time: bool = False,
    ) -> tuple[str, str]:
        """Plan the replica, bring its cluster up and start its job (detached) as managed
        jobs' clusters are (lifecycle/driven.py), `reason` recorded as why (`service web
        revision 3 (scale)`); its infra and the `host:port` its head node serves the
        service `port` at."""
        ...

    def teardown(self, cluster: str, log: Log) -> bool:
        """`skyform down` of the replica's cluster; False when it could not be torn down."""
        ...

    def last_job(self, cluster: str) -> JobRecord | None:
        """The cluster's latest job as its nodes report it; None when it cannot be read."""
        ...

    def log_tail(self, cluster: str, lines: int) -> list[LogLine] | None:
        """The last `lines` lines of the cluster's latest job; None when they cannot be
        read (no cluster, nodes gone or silent)."""
        ...
