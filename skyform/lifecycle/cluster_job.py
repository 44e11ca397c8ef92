"""Run one JobSpec on a cluster: sync the workdir, mount files, set up, submit, follow.

Shared by `apply`, `exec` and the managed-job controller, so a job runs the same way
whoever starts it. State is written at each step (job record, setup marker), never printed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from skyform.errors import ExecError, NodeUnreachable
from skyform.exec.container import ContainerRequest, mount_binds, registry_login
from skyform.exec.node_jobs import run_key, setup_key, setup_log_key
from skyform.exec.results import JobState, LogLine
from skyform.exec.run import ClusterSession, open_cluster
from skyform.lifecycle import clusters
from skyform.lifecycle.interrupts import Starting, stop_stale_setups
from skyform.lifecycle.settle import nodes_of, record_final, settle_unstarted
from skyform.plan.containers import container_image
from skyform.plan.model import BucketMount, JobSpec, PlannedMount
from skyform.spec.accelerators import has_nvidia_gpu
from skyform.state.db import StateDB
from skyform.state.models import ClusterRecord, JobRecord, JobStatus, ReadyCluster
from skyform.storage.attach import with_flush, with_recorded_mounts

NodeEvent = Callable[[str, "int | None", str], None]
LogSink = Callable[[LogLine], None]


@dataclass(frozen=True)
class JobRun:
    """What happened: the job record as last written, and whether setup ran now."""

    job: JobRecord
    setup_ran: bool = False


def task_id_for(cluster: str, job_id: int) -> str:
    return f"skyform-{cluster}-{job_id}"


def _resubstitute(text: str, secrets: Mapping[str, str]) -> str:
    """Plans record `${NAME}` where a secret was substituted into a path; put it back."""
    for name, value in secrets.items():
        text = text.replace("${" + name + "}", value)
    return text


def _workdir_path(job: JobSpec, task_dir: Path, secrets: Mapping[str, str]) -> Path | None:
    if not job.workdir:
        return None
    if job.workdir.startswith("{"):
        raise ExecError(
            f"task {job.name!r}: a git workdir ({job.workdir}) cannot be synced to these nodes",
            "Clone the repository in `setup`, or use a local directory as workdir.",
        )
    path = _local_path(job.workdir, task_dir, secrets)
    if not path.is_dir():
        raise ExecError(
            f"task {job.name!r}: workdir {path} is not a directory",
            "Fix `workdir:` in the task file (relative paths start at its folder).",
        )
    return path


def _local_path(workdir: str, task_dir: Path, secrets: Mapping[str, str]) -> Path:
    path = Path(_resubstitute(workdir, secrets)).expanduser()
    return path if path.is_absolute() else task_dir / path


def synced_workdir(job: JobSpec, task_dir: Path, secrets: Mapping[str, str]) -> Path | None:
    """The local directory the job's workdir sync reads, when there is one to read."""
    if not job.workdir or job.workdir.startswith("{"):
        return None
    path = _local_path(job.workdir, task_dir, secrets)
    return path if path.is_dir() else None


def sync_inputs(
    session: ClusterSession, job: JobSpec, task_dir: Path, secrets: Mapping[str, str]
) -> dict[str, BucketMount]:
    """Sync the workdir and local file mounts, attach the buckets; returns the bucket mounts
    attached (node destination -> mount)."""
    workdir = _workdir_path(job, task_dir, secrets)
    if workdir is not None:
        session.sync_workdir(workdir)
    local = {dst: m for dst, m in job.file_mounts.items() if m.bucket is None}
    if local:
        mounts = {
            _resubstitute(dst, secrets): PlannedMount(
                source=_resubstitute(m.source, secrets), mode=m.mode
            )
            for dst, m in local.items()
        }
        session.sync_file_mounts(mounts, base_dir=task_dir)
    if len(local) < len(job.file_mounts):
        from skyform.config import load_config
        from skyform.storage.attach import attach_buckets

        return attach_buckets(session, job, load_config().storage)
    return {}


def start_job(
    db: StateDB,
    record: ClusterRecord,
    job_spec: JobSpec,
    *,
    task_dir: Path,
    secrets: Mapping[str, str],
    run_setup: bool = True,
    task_id: str | None = None,
    recovery_count: int = 0,
    managed_job_id: int | None = None,
    on_event: NodeEvent | None = None,
    on_log: LogSink | None = None,
    session: ClusterSession | None = None,
) -> tuple[ClusterSession, JobRun]:
    """Sync, set up (once per digest, its output streamed to `on_log`) and submit; return
    the open session and the job. With `run_setup` (apply, the controller: not `exec`) the
    cluster is recorded ready too (mark_ready), right after the submission and before the
    job's record says so: a command that dies in between leaves the job for
    settle_unstarted, which records both from what the nodes have.

    The caller follows or closes the session (pass one already open to reuse its
    connections). On a setup failure the job is recorded as FAILED_SETUP and nothing is
    submitted. A job that cannot start is recorded as it ended — FAILED with the reason, or
    CANCELLED on Ctrl-C (then setup is stopped on the nodes and Interrupted raised) — never
    left INIT or SETTING_UP. Jobs an earlier command left unstarted are settled from the
    nodes first (lifecycle/settle.py).
    """
    assert record.handle is not None
    job_id = db.next_job_id(record.name)
    task_id = task_id or task_id_for(record.name, job_id)
    key = run_key(record.name, job_id, recovery_count)
    ready = ReadyCluster(
        setup_done=job_spec.setup_digest, job=record.job, workdir_files=record.workdir_files
    )
    cluster_nodes = len(record.handle.nodes)
    on_fewer = job_spec.num_nodes if job_spec.num_nodes < cluster_nodes else None
    start = Starting(
        db,
        JobRecord(
            cluster=record.name,
            job_id=job_id,
            name=job_spec.name,
            task_id=task_id,
            status=JobStatus.INIT,
            submitted_at=time.time(),
            managed_job_id=managed_job_id,
            resources=f"{on_fewer or record.spec.num_nodes}x {record.spec.offer.instance_type}",
            recovery_count=recovery_count,
            num_nodes=on_fewer,
            cluster_update=ready if run_setup else None,
        ),
    )
    opened = session is None
    try:
        # exec (no setup) checks the nodes' runner in its launch's round trip, not before
        session = session or open_cluster(record.handle, on_event=on_event, prepare=run_setup)
    except BaseException as exc:
        raise start.abandon(None, exc) from None
    try:
        settle_unstarted(
            db, record.name, managed_job_id=managed_job_id, nodes=nodes_of(session), skip=job_id
        )
        if managed_job_id is None and record.spec.autostop is not None:
            _arm_autostop(session, record, on_event)
        # the cluster's own bucket mounts too (an exec after a stop and start): before
        # anything runs, so what it writes there reaches the bucket
        mounted = with_recorded_mounts(job_spec, record.job)
        attached = sync_inputs(session, mounted, task_dir, secrets)
        kept = None if run_setup else record.job  # exec keeps the cluster's mounts mapped
        fresh_container = _start_container(session, record, mounted, secrets, kept)
        setup_ran = False
        # exec runs no setup of its own, but a container made anew (removed on the node, or
        # the node replaced) lost what the cluster's setup installed: that runs again first
        setup_spec = job_spec if run_setup else (record.job if fresh_container else None)
        setup_due = fresh_container or record.setup_done != job_spec.setup_digest
        if setup_spec is not None and setup_spec.setup and setup_due:
            if not run_setup:
                _require_secrets(setup_spec, secrets, record.name)
            setup = setup_key(record.name, setup_spec.setup_digest)
            stop_stale_setups(db, session, record.name, keep=setup)
            start.update(status=JobStatus.SETTING_UP, setup_key=setup)
            state = session.setup(
                setup_spec,
                task_id=task_id,
                secrets=secrets,
                recovery_count=recovery_count,
                on_log=on_log,
            )
            session.keep_log(state.key, setup_log_key(key))
            setup_ran = not state.skipped
            if state.status is not JobStatus.SUCCEEDED or state.unreachable:
                why = f"setup {state.summary()}"
                job = record_final(db, start.update(reason=why), state, why)
                _ready(db, record, job_spec, job, run_setup)
                return session, JobRun(job=job, setup_ran=setup_ran)
        if not job_spec.run:  # setup only (a dev cluster, as `sky launch` makes one)
            job = _nothing_to_run(db, start)
            _ready(db, record, job_spec, job, run_setup)
            return session, JobRun(job=job, setup_ran=setup_ran)
        start.phase = "submit"
        state = session.narrowed(on_fewer).submit(
            with_flush(job_spec, attached),
            job_key=key,
            task_id=task_id,
            secrets=secrets,
            recovery_count=recovery_count,
        )
        start.phase = "submitted"  # the nodes have it: from here on, they decide its record
        _ready(db, record, job_spec, start.job, run_setup)
        job = start.update(status=JobStatus.RUNNING, started_at=time.time(), cluster_update=None)
        if state.status.is_terminal:
            job = record_final(db, job, state)
        return session, JobRun(job=job, setup_ran=setup_ran)
    except BaseException as exc:
        error = start.abandon(session, exc)
        if opened:
            session.close()
        if error is exc:
            raise
        raise error from None


def _start_container(
    session: ClusterSession,
    record: ClusterRecord,
    job: JobSpec,
    secrets: Mapping[str, str],
    kept: JobSpec | None,
) -> bool:
    """`image_id: docker:IMAGE`: the container every node runs setup and run in, with the
    job's mount destinations mapped (after they were made), and those of `kept` (the job
    the cluster was applied with, for an exec: its container stays as it is). True when a
    node made a new one: whatever an earlier setup installed went with the old container."""
    image = container_image(record.spec.image_id, record.spec.offer.cloud)
    if image is None:
        return False
    destinations = [_resubstitute(dst, secrets) for dst in job.file_mounts]
    destinations += [_resubstitute(dst, secrets) for dst in (kept.file_mounts if kept else ())]
    offer = record.spec.offer
    request = ContainerRequest(
        record.name,
        image,
        mount_binds(destinations),
        registry_login(job.envs, secrets),
        gpus=has_nvidia_gpu(offer.accelerator) and offer.accelerator_count > 0,
    )
    return session.start_containers(request)


def _require_secrets(setup: JobSpec, secrets: Mapping[str, str], cluster: str) -> None:
    missing = sorted(set(setup.secrets) - set(secrets))
    if missing:
        raise ExecError(
            f"cluster {cluster!r}: its container was made anew, and the cluster's setup that "
            f"must run in it again needs secret {missing[0]}",
            f"Apply the cluster's task again with --secret {missing[0]}=..., or exec its task "
            "file with the secret.",
        )


def _ready(
    db: StateDB, record: ClusterRecord, job_spec: JobSpec, job: JobRecord, run_setup: bool
) -> None:
    if run_setup:
        mark_ready(db, record, job_spec, job)


def _arm_autostop(session: ClusterSession, record: ClusterRecord, on_event) -> None:
    """Give the head node's agent the cluster's setting with each job (its countdown starts
    again; a managed job's clusters are never armed: their controller decides)."""
    from skyform.config import load_config
    from skyform.lifecycle.autostop import arm_head

    head = session.runners.get(0)
    if head is None:
        return
    message = arm_head(head, record, record.spec.autostop, load_config())
    if on_event is not None:
        on_event("autostop", 0, message)


def _nothing_to_run(db: StateDB, start: Starting) -> JobRecord:
    now = time.time()
    job = done = start.update(
        status=JobStatus.SUCCEEDED, started_at=now, ended_at=now, cluster_update=None
    )
    db.add_event(
        "job.succeeded",
        f"job {job.job_id}: the task has no `run`; nothing to run after setup",
        cluster=job.cluster,
        job_id=job.job_id,
    )
    return done


def mark_ready(
    db: StateDB, record: ClusterRecord, job_spec: JobSpec, job: JobRecord
) -> ClusterRecord:
    """The cluster is UP, and its setup done unless it just failed (start_job calls it)."""
    done = (
        job_spec.setup_digest if job.status is not JobStatus.FAILED_SETUP else (record.setup_done)
    )
    return clusters.mark_up(db, record, setup_done=done)


def job_key(job: JobRecord) -> str:
    return run_key(job.cluster, job.job_id, job.recovery_count)


def on_job_nodes(session: ClusterSession, job: JobRecord) -> ClusterSession:
    """The session as the job sees the cluster: the nodes it runs on (see JobRecord.num_nodes)."""
    return session.narrowed(job.num_nodes)


def follow_job(
    db: StateDB,
    session: ClusterSession,
    job: JobRecord,
    *,
    on_log: LogSink | None = None,
    node: int | None = None,
    tail: int | None = None,
) -> JobRecord:
    """Stream the job's logs (all nodes, or one; `tail`: from each one's last `tail` lines)
    until it ends; record the final status.

    A node that stops answering fails the job and its parts on the other nodes are cancelled
    (the managed-job controller treats that as a preemption and recovers)."""
    key = job_key(job)
    session = on_job_nodes(session, job)
    # Wait in the background (it cancels the other nodes when one fails, as SkyPilot does),
    # while this thread streams the logs; the stream ends when every node's job has ended.
    waited: list[JobState] = []
    failed: list[BaseException] = []
    followed = () if on_log is None else [node] if node is not None else session.ranks()

    def waiter() -> None:
        try:
            state = session.wait(key, followed=followed)  # ends seen in the logs count
            if any(e.node_is_gone for e in state.unreachable.values()):
                # a lost node fails the job: stop its parts on the nodes still up
                session.cancel(key, grace=2)
            waited.append(state)
        except BaseException as exc:  # handed to the caller below
            failed.append(exc)

    # what the waiter reports (a node's part ended) comes after every line of output
    held: list[tuple[str, int | None, str]] = []
    emit = session.emit
    if on_log is not None:
        session.emit = lambda stage, rank, message: held.append((stage, rank, message))
    thread = threading.Thread(target=waiter, daemon=True, name=f"wait-{key}")
    thread.start()
    reason = ""
    try:
        if on_log is not None:
            for line in session.logs(key, rank=node, follow=True, tail=tail):
                on_log(line)
    except NodeUnreachable as err:
        reason = f"a node stopped answering: {err.message}"
    except BaseException:  # Ctrl-C: stop following at once, the job goes on
        session.emit = emit
        raise
    thread.join()
    session.emit = emit
    for event in held:
        emit(*event)
    if failed:
        error = failed[0]
        if not isinstance(error, NodeUnreachable):
            raise error
        reason = reason or f"a node stopped answering: {error.message}"
        state = session.status(key)
    else:
        state = waited[0]
        if state.unreachable:
            ranks = ", ".join(str(r) for r in state.unreachable)
            first = next(iter(state.unreachable.values()))
            reason = f"node {ranks} stopped answering: {first.message}"
    return record_final(db, job, state, reason)


def refresh_job(db: StateDB, session: ClusterSession, job: JobRecord) -> JobRecord:
    """Read a submitted job's state from the nodes (for queue/logs) and record it. Jobs not
    yet submitted (INIT, SETTING_UP) are left to the apply that owns them."""
    if job.status not in (JobStatus.RUNNING, JobStatus.PENDING):
        return job
    state = on_job_nodes(session, job).status(job_key(job))
    gone = {r: e for r, e in state.unreachable.items() if e.node_is_gone}
    if gone:  # a node that refuses connections is down: its part of the job is lost
        ranks = ", ".join(str(r) for r in gone)
        first = next(iter(gone.values()))
        return record_final(db, job, state, f"node {ranks} is gone: {first.message}")
    if not state.status.is_terminal or state.unreachable:
        return job  # still running, or a node is only slow to answer: ask again later
    return record_final(db, job, state)
