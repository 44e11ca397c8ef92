"""A service replica's cluster through skyform's own verbs: `plan` places it, `apply`
provisions it and starts its job (detached), `down` takes it away, and the cluster-job
verbs read its job's end and log. The service controller gets this (serve/clusters.py's
ReplicaClusters) from whoever starts it, so the service subsystem does not import `ops`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from skyform.errors import SkyformError
from skyform.exec.results import LogLine
from skyform.serve.clusters import Log
from skyform.serve.replica_launch import ReplicaInputs
from skyform.state.models import JobRecord

# replicas on node pools launch one at a time: two plans made at once would pick the same
# free host, and the second apply would find it taken
_POOL_LAUNCHES = threading.Lock()


class _Quiet:
    """apply's progress reporting, sent to the controller's log."""

    def __init__(self, log: Log) -> None:
        self._log = log

    def stage(self, cluster: str, stage: str, detail: str = "") -> None:
        self._log(f"{cluster}: {stage} {detail}".rstrip())

    def event(self, cluster: str, stage: str, rank: int | None, message: str) -> None:
        self._log(f"{cluster}: {stage}: {message}")

    def log(self, cluster: str, line: Any) -> None:
        pass


class AppliedClusters:
    """serve.clusters.ReplicaClusters through plan, apply, down and the job verbs."""

    def planned_infra(self, inputs: ReplicaInputs, task: Path, cluster: str) -> str:
        from skyform.ops.plan import plan_task

        result = plan_task(task, cluster=cluster, inputs=inputs.task_inputs())
        placement = result.plan.placement_for(cluster)
        return placement.offer.infra if placement is not None else "local"

    def launch(
        self,
        inputs: ReplicaInputs,
        task: Path,
        cluster: str,
        log: Log,
        *,
        port: int,
        one_at_a_time: bool = False,
    ) -> tuple[str, str]:
        if one_at_a_time:
            with _POOL_LAUNCHES:
                return self.launch(inputs, task, cluster, log, port=port)
        from skyform.ops.applier import ApplyOptions
        from skyform.ops.apply import apply_plan
        from skyform.ops.plan import plan_task
        from skyform.plan.planfile import write_plan

        secrets = [f"{k}={v}" for k, v in inputs.secrets.items()]
        plan_path = task.with_suffix(".plan.json")
        result = plan_task(task, out=plan_path, cluster=cluster, inputs=inputs.task_inputs())
        write_plan(result.plan, plan_path)
        outcomes = apply_plan(
            result.plan,
            plan_path,
            progress=_Quiet(log),
            options=ApplyOptions(detach=True, secret_overrides=secrets, take_over=True),
        )
        for outcome in outcomes:
            if outcome.failed:
                raise SkyformError(f"replica {cluster} failed to start: {outcome.message}")
        placement = result.plan.placement_for(cluster)
        infra = placement.offer.infra if placement is not None else "local"
        return infra, _head_address(cluster, port)

    def teardown(self, cluster: str, log: Log) -> bool:
        return teardown(cluster, log)

    def last_job(self, cluster: str) -> JobRecord | None:
        from skyform.ops.cluster_jobs import refresh_jobs
        from skyform.state.db import open_state

        try:
            with open_state() as db:
                record = db.get_cluster(cluster)
                if record is None:
                    return None
                jobs, _ = refresh_jobs(db, record)
        except SkyformError:
            return None
        return jobs[-1] if jobs else None

    def log_tail(self, cluster: str, lines: int) -> list[LogLine] | None:
        from skyform.ops.cluster_jobs import stream_logs
        from skyform.state.db import open_state

        read: list[LogLine] = []
        try:
            with open_state() as db:
                record = db.get_cluster(cluster)
                if record is None or record.handle is None:
                    return None
                stream_logs(
                    db, record, None, follow=False, node=None, on_log=read.append, tail=lines
                )
        except SkyformError:
            return None
        return read[-lines:]


def _head_address(cluster: str, port: int) -> str:
    """Where the replica's head node serves `port` (loopback for a local node)."""
    from skyform.state.db import open_state

    with open_state() as db:
        record = db.get_cluster(cluster)
    if record is None or record.handle is None or not record.handle.nodes:
        raise SkyformError(f"replica {cluster} has no nodes after its launch")
    return record.handle.endpoint(port)


def teardown(cluster: str, log: Log) -> bool:
    """`skyform down` of the replica's cluster; False when it could not be torn down."""
    from skyform.config import load_config
    from skyform.ops.down import take_down
    from skyform.state.db import open_state

    try:
        with open_state() as db:
            if db.get_cluster(cluster) is None:
                return True
            # each line names the replica's cluster, as its launch's lines do: the
            # controller's log interleaves it with the launch of its replacement
            take_down(
                db, load_config(), cluster, purge=False, emit=lambda x: log(f"{cluster}: {x}")
            )
            return True
    except SkyformError as exc:
        log(f"{cluster}: teardown failed: {exc.message}")
        return False
