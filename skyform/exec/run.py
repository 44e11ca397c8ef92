"""Fan-out over a cluster's nodes: connect, sync, setup, submit, status, wait, logs, cancel.

    with open_cluster(handle, on_event=cb) as session:      # connects + installs the runner
        session.sync_workdir(Path(spec.workdir))
        session.sync_file_mounts(spec.file_mounts, base_dir=task_dir)
        setup = session.setup(spec, task_id=tid, secrets=secrets)   # once per setup digest
        if setup.status is JobStatus.SUCCEEDED:
            key = run_key(handle.name, job_id)
            session.submit(spec, job_key=key, task_id=tid, secrets=secrets)
            final = session.wait(key)     # JobState: status, exit_codes, reasons, unreachable

Every node works in parallel on one reused connection. Nothing here prints: progress goes to
`on_event(stage, rank, message)`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from skyform.errors import ExecError, NodeUnreachable
from skyform.exec import node_jobs
from skyform.exec.container import ContainerRequest, NodeContainer, ensure_container
from skyform.exec.env import job_env, render_env_file
from skyform.exec.follow import Sightings, follow_logs, wait_for_job
from skyform.exec.hostkeys import KnownHosts
from skyform.exec.keeperclient import runner_opener
from skyform.exec.mounts import resolve_mounts
from skyform.exec.node_jobs import WORKDIR, NodeFacts, NodeJob, NodeJobState
from skyform.exec.results import EventFn, JobState, LogLine, NodeOutcome, T, raise_first
from skyform.exec.runner import NodeRunner, Timeouts
from skyform.exec.sync import SyncResult, sync_path
from skyform.plan.model import JobSpec, PlannedMount
from skyform.state.models import ClusterHandle, JobStatus


def _quiet(stage: str, rank: int | None, message: str) -> None:
    return None


class ClusterSession:
    """Open runners to every node of one cluster. Use `open_cluster` to make one."""

    def __init__(
        self,
        cluster: ClusterHandle,
        *,
        known_hosts: KnownHosts | None = None,
        timeouts: Timeouts | None = None,
        on_event: EventFn | None = None,
    ) -> None:
        self.cluster = cluster
        self.known_hosts = known_hosts or KnownHosts()
        self.timeouts = timeouts or Timeouts()
        self.emit: EventFn = on_event or _quiet
        self.runners: dict[int, NodeRunner] = {}
        self.facts: dict[int, NodeFacts] = {}
        self.unreachable: dict[int, NodeUnreachable] = {}
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(64, 2 * len(cluster.nodes))))
        self._sightings = Sightings()  # job ends the log followers saw
        self._unprepared: set[int] = set()  # connected with prepare=False, runner not checked
        self.containers: dict[int, str] = {}  # rank -> "RUNTIME... NAME" jobs run inside

    # --- plumbing ------------------------------------------------------------------------

    def ranks(self) -> list[int]:
        return sorted(n.rank for n in self.cluster.nodes)

    def runner(self, rank: int) -> NodeRunner | None:
        return self.runners.get(rank)

    def lost(self, rank: int) -> NodeUnreachable:
        return self.unreachable[rank]

    def narrowed(self, num_nodes: int | None) -> ClusterSession:
        """This session seen as a cluster of its first `num_nodes` nodes (the head first),
        for a job that asks for fewer nodes than the cluster has (`exec --num-nodes 1`): it
        is launched, watched, read and cancelled there only, and sees SKYPILOT_NUM_NODES
        and SKYPILOT_NODE_IPS of those nodes, as in SkyPilot. Shares the connections: close
        the session it came from, not the view (closing either closes both)."""
        if num_nodes is None or num_nodes >= len(self.cluster.nodes):
            return self
        view = copy.copy(self)
        nodes = [n for n in self.cluster.nodes if n.rank < num_nodes]
        view.cluster = self.cluster.model_copy(update={"nodes": nodes})
        return view

    def mark_unreachable(self, rank: int, error: NodeUnreachable) -> None:
        self.unreachable[rank] = error

    def observe(self, key: str, rank: int, job: NodeJob | None) -> None:
        self._sightings.observe(key, rank, job)

    def observed(self, key: str, rank: int, timeout: float) -> NodeJob | None:
        return self._sightings.observed(key, rank, timeout)

    def fan_out(
        self,
        fn: Callable[[int, NodeRunner], T],
        ranks: Iterable[int] | None = None,
        *,
        prepared: bool = True,
    ) -> dict[int, NodeOutcome[T]]:
        """Run fn(rank, runner) on every node (or `ranks`) in parallel; errors become outcomes.

        A node that never connected reports its NodeUnreachable; a node whose connection
        dropped is reconnected once by its runner (a node back from a blip answers again).
        """
        ranks = sorted(n.rank for n in self.cluster.nodes) if ranks is None else sorted(ranks)

        def one(rank: int) -> NodeOutcome[T]:
            if rank not in self.runners:
                return NodeOutcome(rank, error=self.unreachable[rank])
            try:
                if prepared and rank in self._unprepared:
                    self._prepare(rank)
                value = fn(rank, self.runners[rank])
            except ExecError as exc:
                if isinstance(exc, NodeUnreachable):
                    self.unreachable[rank] = exc
                return NodeOutcome(rank, error=exc)
            self.unreachable.pop(rank, None)
            return NodeOutcome(rank, value)

        return dict(zip(ranks, self._pool.map(one, ranks), strict=True))

    def _prepare(self, rank: int) -> NodeFacts:
        self.facts[rank] = node_jobs.prepare_node(self.runners[rank])
        self._unprepared.discard(rank)
        return self.facts[rank]

    def connect(self, *, require_all: bool = True, prepare: bool = True) -> None:
        """Open every node's runner; with `prepare`, install the job runner there at once
        (else on first use: a launch checks it in its own round trip)."""

        # SSH nodes: through the cluster's connection keeper when it can (keeperclient.py)
        opener = runner_opener(self.cluster, self.known_hosts, self.timeouts)

        def one(node) -> tuple[NodeRunner, NodeFacts | None]:
            runner = opener(node)
            try:
                facts = node_jobs.prepare_node(runner) if prepare else None
            except BaseException:
                runner.close()
                raise
            self.emit("connect", node.rank, "connected")
            return runner, facts

        outcomes: dict[int, NodeOutcome[None]] = {}
        for node, future in [(n, self._pool.submit(one, n)) for n in self.cluster.nodes]:
            try:
                self.runners[node.rank], facts = future.result()
                if facts is None:
                    self._unprepared.add(node.rank)
                else:
                    self.facts[node.rank] = facts
                outcomes[node.rank] = NodeOutcome(node.rank)
            except ExecError as exc:
                self.emit("connect", node.rank, f"failed: {exc.message}")
                if isinstance(exc, NodeUnreachable):
                    self.unreachable[node.rank] = exc
                outcomes[node.rank] = NodeOutcome(node.rank, error=exc)
        if require_all:
            raise_first(outcomes, "connecting")
        # only "did not answer" may be carried as a per-node state; anything else is a fault
        raise_first(
            {r: o for r, o in outcomes.items() if not isinstance(o.error, NodeUnreachable)},
            "preparing nodes",
        )

    def close(self) -> None:
        for runner in self.runners.values():
            runner.close()
        self.runners.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> ClusterSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- files ---------------------------------------------------------------------------

    def sync_workdir(self, workdir: Path) -> dict[int, SyncResult]:
        """Copy the workdir to ~/skyform_workdir on every node (rsync; SFTP/copy fallback)."""
        workdir = Path(workdir).expanduser()
        if not workdir.is_dir():
            raise ExecError(f"workdir {workdir} is not a directory")
        return self._sync([(workdir, f"~/{WORKDIR}")], "sync_workdir")

    def sync_file_mounts(self, mounts: Mapping[str, PlannedMount], *, base_dir: Path) -> None:
        """Copy local file mounts to every node; bucket URIs are refused before any copy."""
        if not mounts:
            return
        for kind in {n.kind for n in self.cluster.nodes}:  # each kind has its own limits
            copies = resolve_mounts(dict(mounts), base_dir=base_dir, node_kind=kind)
        self._sync([(c.source, c.dst) for c in copies], "file_mounts")

    def _sync(self, pairs: list[tuple[Path, str]], stage: str) -> dict[int, SyncResult]:
        def one(rank: int, runner: NodeRunner) -> SyncResult:
            result = None
            for src, dst in pairs:
                facts = self.facts.get(rank) or self._prepare(rank)  # rsync known from there
                result = sync_path(
                    runner,
                    src,
                    dst,
                    node_has_rsync=facts.rsync,
                    node_rsync=facts.rsync_about,
                    known_hosts=self.known_hosts,
                )
                sent = result.files_sent
                count = "? files" if sent is None else f"{sent} file{'s' if sent != 1 else ''}"
                self.emit(stage, rank, f"{dst}: {count} sent ({result.method})")
            assert result is not None
            return result

        outcomes = self.fan_out(one)
        raise_first(outcomes, stage.replace("_", " "))
        return {rank: o.value for rank, o in outcomes.items()}  # type: ignore[misc]

    # --- setup and run -------------------------------------------------------------------------

    def start_containers(self, request: ContainerRequest) -> bool:
        """The cluster's container running on every node, before setup and run (which then
        start inside it). True when some node made a new one (its setup must run again)."""

        def one(rank: int, runner: NodeRunner) -> NodeContainer:
            box = ensure_container(runner, request)
            self.emit("container", rank, f"{request.image}: {box.how} ({box.runtime})")
            return box

        outcomes = self.fan_out(one)
        raise_first(outcomes, "starting containers")
        boxes = {rank: o.value for rank, o in outcomes.items() if o.value is not None}
        self.containers = {rank: box.runner_arg for rank, box in boxes.items()}
        return any(box.how == "created" for box in boxes.values())

    def _launch(
        self,
        key: str,
        script: str,
        spec: JobSpec,
        *,
        task_id: str,
        secrets: Mapping[str, str] | None,
        recovery_count: int,
        setup: bool,
    ) -> JobState:
        missing = sorted(set(spec.secrets) - set(secrets or {}))
        if missing:
            raise ExecError(
                f"secret {missing[0]} has no value", hint=f"pass --secret {missing[0]}=..."
            )
        stage = "setup" if setup else "run"
        cwd = WORKDIR  # there when synced (node-side: else the home), as in SkyPilot
        self._sightings.forget(key)  # a failed setup launched again ends anew

        def one(rank: int, runner: NodeRunner) -> NodeJob:
            env = job_env(
                self.cluster,
                rank,
                task_id=task_id,
                envs=spec.envs,
                secrets=secrets,
                recovery_count=recovery_count,
                setup=setup,
                checkpoint_dir=spec.checkpoint_dir,
            )
            job = node_jobs.launch(
                runner, key, env_file=render_env_file(env), script=script, cwd=cwd,
                rerun_failed=setup, prepare=self._prepare if rank in self._unprepared else None,
                container=self.containers.get(rank, ""),
            )  # fmt: skip
            self._unprepared.discard(rank)
            self.emit(stage, rank, node_jobs.launch_message(job))
            return job

        return self._state(key, self.fan_out(one, prepared=False), setup=setup)

    def setup(
        self,
        spec: JobSpec,
        *,
        task_id: str,
        secrets: Mapping[str, str] | None = None,
        recovery_count: int = 0,
        timeout: float | None = None,
        on_log: Callable[[LogLine], None] | None = None,
    ) -> JobState:
        """Run setup on every node once per (cluster, setup digest) and wait for it, passing
        its output to `on_log` as it comes (from its start, also for a setup waited for).

        Already done → skipped. Running (a previous apply was killed) → waited for.
        Failed before → run again. Returns SUCCEEDED, FAILED_SETUP or CANCELLED per node.
        """
        key = node_jobs.setup_key(self.cluster.name, spec.setup_digest)
        if not spec.setup:
            return JobState(key, JobStatus.SUCCEEDED, setup=True, skipped=True)
        launched = self._launch(
            key, spec.setup, spec, task_id=task_id, secrets=secrets,
            recovery_count=recovery_count, setup=True,
        )  # fmt: skip
        skipped = bool(launched.nodes) and all(
            j.state is NodeJobState.SUCCEEDED for j in launched.nodes.values()
        )
        if launched.unreachable or skipped:
            return JobState.of(
                key, launched.nodes, launched.unreachable, setup=True, skipped=skipped
            )
        if on_log is not None:
            try:
                for line in self.logs(key, follow=True, setup=True):
                    on_log(line)
            except NodeUnreachable:
                pass  # the wait below reports the node
        seen = self.ranks() if on_log is not None else ()  # their ends: from the logs above
        final = self.wait(key, setup=True, timeout=timeout, cancel_on_failure=False, followed=seen)
        unstarted = {r: launched.nodes[r] for r in launched.failed_ranks}  # keep the reason
        return JobState.of(key, {**final.nodes, **unstarted}, final.unreachable, setup=True)

    def submit(
        self,
        spec: JobSpec,
        *,
        job_key: str,
        task_id: str,
        secrets: Mapping[str, str] | None = None,
        recovery_count: int = 0,
    ) -> JobState:
        """Start `spec.run` detached on every node (idempotent per job_key); returns at once.

        If it cannot start on some node, the nodes where it did start are cancelled and the
        job is FAILED with that node's reason.
        """
        if not spec.run:
            raise ExecError(f"task {spec.name!r} has no `run` command to submit")
        state = self._launch(
            job_key, spec.run, spec, task_id=task_id, secrets=secrets,
            recovery_count=recovery_count, setup=False,
        )  # fmt: skip
        if state.failed_ranks:
            running = [r for r, j in state.nodes.items() if not j.state.is_terminal]
            self.fan_out(lambda r, runner: node_jobs.cancel(runner, job_key), running)
            after = self.status(job_key)
            failed = {r: state.nodes[r] for r in state.failed_ranks}  # keeps the launch reason
            return JobState.of(job_key, {**after.nodes, **failed}, after.unreachable)
        return state

    def status(self, key: str, *, setup: bool = False) -> JobState:
        outcomes = self.fan_out(lambda rank, runner: node_jobs.status(runner, [key])[key])
        return self._state(key, outcomes, setup=setup)

    def _state(self, key: str, outcomes: dict[int, NodeOutcome], *, setup: bool) -> JobState:
        """Node answers to a JobState; unreachable nodes are kept, other errors raised."""
        nodes = {r: o.value for r, o in outcomes.items() if o.ok}
        lost = {r: o.error for r, o in outcomes.items() if isinstance(o.error, NodeUnreachable)}
        others = [o.error for o in outcomes.values() if o.error and o.rank not in lost]
        if others:
            raise others[0]
        return JobState.of(key, nodes, lost, setup=setup)  # type: ignore[arg-type]

    def cancel(self, key: str, *, grace: int = 5) -> JobState:
        """Kill the job's process group on every node; it ends CANCELLED."""

        def one(rank: int, runner: NodeRunner) -> NodeJob:
            job = node_jobs.cancel(runner, key, grace)
            self.emit("cancel", rank, job.state.value.lower())
            return job

        return self._state(key, self.fan_out(one), setup=False)

    def wait(
        self,
        key: str,
        *,
        setup: bool = False,
        timeout: float | None = None,
        cancel_on_failure: bool = True,
        followed: Collection[int] = (),
    ) -> JobState:
        """Until every node is done, a node is unreachable, or `timeout` passes.

        With cancel_on_failure (SkyPilot's behaviour for runs), the first failed node cancels
        the others; the job is FAILED either way. `followed`: ranks whose logs are followed
        meanwhile (`logs(follow=True)`): their ends are taken from there.
        """
        return wait_for_job(
            self, key, setup=setup, timeout=timeout, cancel_on_failure=cancel_on_failure,
            followed=followed,
        )  # fmt: skip

    def logs(
        self,
        key: str,
        *,
        rank: int | None = None,
        follow: bool = False,
        poll: float = 0.5,
        setup: bool = False,
        tail: int | None = None,
    ) -> Iterator[LogLine]:
        """Complete lines of the job's log, node by node in rank order per poll (`setup`
        marks them as a setup's); with `tail`, from each node's last `tail` lines.

        With follow, keeps reading until the job ends on every node followed. A node that
        stops answering ends its stream; NodeUnreachable is raised after the other lines.
        """
        return follow_logs(self, key, rank=rank, follow=follow, poll=poll, setup=setup, tail=tail)

    def keep_log(self, key: str, copy: str) -> None:
        """Copy a finished job's files (log, result) under another key on every node that
        answers: a job's setup output stays its own when the setup is run again later."""
        for rank, outcome in self.fan_out(
            lambda r, runner: node_jobs.keep(runner, key, copy)
        ).items():
            if outcome.error is not None:  # the output stays under `key` until run again
                self.emit("setup", rank, f"could not keep a copy of the log: {outcome.error}")


def open_cluster(
    cluster: ClusterHandle,
    *,
    known_hosts: KnownHosts | None = None,
    timeouts: Timeouts | None = None,
    on_event: EventFn | None = None,
    require_all: bool = True,
    prepare: bool = True,
) -> ClusterSession:
    """Connect to every node in parallel and install the runner (with prepare=False, on
    first use). With require_all=False a node that does not answer is kept in
    `session.unreachable` instead of raising."""
    session = ClusterSession(cluster, known_hosts=known_hosts, timeouts=timeouts, on_event=on_event)
    try:
        session.connect(require_all=require_all, prepare=prepare)
    except BaseException:
        session.close()
        raise
    return session
