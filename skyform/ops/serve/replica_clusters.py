"""A service replica's cluster through skyform's own use cases: `plan` places it, it is
brought up and its job started (detached) the way a managed job's cluster is
(lifecycle/driven.py: under its lock, in the service's name, the revision that launched it
recorded as the reason), `down` takes it away, and the cluster-job verbs read its job's end
and log. The service controller gets this (serve/clusters.py's ReplicaClusters) from whoever
starts it, so the service subsystem does not import `ops`.
"""

from __future__ import annotations

import threading
from pathlib import Path

from skyform.errors import SkyformError
from skyform.exec.results import LogLine
from skyform.serve.clusters import Log
from skyform.serve.replica_launch import ReplicaInputs
from skyform.state.models import JobRecord, JobStatus

# replicas on node pools launch one at a time: two plans made at once would pick the same
# free host, and the second launch would find it taken
_POOL_LAUNCHES = threading.Lock()
_NOT_STARTED = (JobStatus.FAILED, JobStatus.FAILED_SETUP, JobStatus.CANCELLED)


class AppliedClusters:
    """serve.clusters.ReplicaClusters through plan, the controllers' launch, down and the
    job verbs."""

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
        reason: str,
        one_at_a_time: bool = False,
    ) -> tuple[str, str]:
        if one_at_a_time:
            with _POOL_LAUNCHES:
                return self.launch(inputs, task, cluster, log, port=port, reason=reason)
        return launch_replica(inputs, task, cluster, log, port=port, reason=reason)

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


def launch_replica(
    inputs: ReplicaInputs, task: Path, cluster: str, log: Log, *, port: int, reason: str
) -> tuple[str, str]:
    """Plan the replica's task, then, holding its cluster for the service: check its
    file-mount destinations and make its buckets (as `apply` does, against the state as it
    is now), tear down what an earlier launch left under its name (an INIT one is carried
    on), bring the cluster up and start its job detached. Its secrets are the version's
    (`serve up --secret`), never the controller's environment, and reach the job's env
    only. (infra, `host:port` of the service port on the head node)."""
    from skyform.config import load_config
    from skyform.lifecycle import clusters
    from skyform.lifecycle.driven import Driver, bring_up, driving, start_detached
    from skyform.ops.plan import check_ssh_destinations, plan_task
    from skyform.ops.secrets import resolve_secrets
    from skyform.plan.planfile import content_digest
    from skyform.spec.loader import read_task_bytes
    from skyform.state.db import open_state
    from skyform.state.models import ClusterStatus

    plan = plan_task(task, cluster=cluster, inputs=inputs.task_inputs()).plan
    placement, change = plan.placement_for(cluster), plan.change_for(cluster)
    if placement is None or change is None or change.after is None:
        raise SkyformError(f"the plan of replica {cluster} makes no cluster {cluster!r}")
    spec = change.after
    task_dir = Path(plan.base_dir() or inputs.paths_start())
    given = [f"{k}={v}" for k, v in inputs.secrets.items()]
    secrets = resolve_secrets(plan, task, read_task_bytes(task), secret_overrides=given, environ={})
    digest = content_digest(plan)
    service = Driver(f"service {inputs.service}", "serve", {"service": inputs.service})
    config = load_config()

    def said(message: str) -> None:  # the controller's log interleaves replicas
        log(f"{cluster}: {message}")

    with open_state() as db, driving(db, cluster, service.name):
        check_ssh_destinations(plan, config, db.taken_nodes(), task_dir)
        if plan.buckets:
            from skyform.storage.provision import ensure_buckets

            ensure_buckets(
                plan, task_dir, db, config.storage, said, config=config, plan_digest=digest
            )
        current = db.get_cluster(cluster)
        if current is not None and current.status is not ClusterStatus.INIT:
            said(f"tearing down what an earlier launch left ({current.status.value})")
            clusters.destroy(db, config, current, reason=f"replaced by {service.name}", emit=said)
            current = None
        said(f"provision {spec.offer.infra} {spec.num_nodes}x {spec.offer.instance_type}")
        record = bring_up(
            db,
            config,
            spec,
            service,
            current=current,
            reason=reason,
            source=str(task.resolve()),
            plan_digest=digest,
            log=said,
        )
        said(f"run sync, setup and run `{placement.task}`")
        session, run = start_detached(
            db,
            record,
            placement.job,
            service,
            task_dir=task_dir,
            secrets=secrets.get(placement.task, {}),
            log=log,
        )
        session.close()
    if run.job.status in _NOT_STARTED:
        raise SkyformError(f"replica {cluster} failed to start: {run.job.status.value}")
    assert record.handle is not None
    return placement.offer.infra, record.handle.endpoint(port)


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
