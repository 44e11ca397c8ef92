"""Typed records shared by state, engines and exec: what a cluster is once it exists.

All JSON-serializable pydantic models; state.db stores them as JSON, never pickled.
"""

from __future__ import annotations

from enum import Enum, IntEnum

from skyform.frozen import Stored as _Model
from skyform.plan.model import ClusterSpec, JobSpec, PlacedOffer, WorkdirFiles
from skyform.state.rows import ClusterStatus


class NodeKind(str, Enum):
    SSH = "ssh"  # reached over SSH (ssh pools, cloud VMs, Kubernetes pods with sshd)
    LOCAL = "local"  # a directory on this machine; commands run as local processes


class NodeHandle(_Model):
    """How to reach one node. `ip` is what other nodes use (SKYFORM_NODE_IPS)."""

    rank: int
    kind: NodeKind = NodeKind.SSH
    host: str
    port: int = 22
    user: str | None = None
    identity_file: str | None = None
    ip: str
    node_id: str  # engine's id: instance id, pool host id, local directory name
    root: str | None = None  # LOCAL nodes: the directory that acts as the node's home
    # task ports reached at another port of `host` (a Kubernetes NodePort): ((8080, 30080),)
    node_ports: tuple[tuple[int, int], ...] = ()

    def reached_at(self, port: int) -> int:
        """The port of `host` that reaches the task's `port`."""
        return dict(self.node_ports).get(port, port)


class ClusterHandle(_Model):
    """What an engine returns from `up`: everything needed to run on the cluster."""

    name: str
    engine: str  # local | ssh | pulumi
    infra: str
    offer: PlacedOffer
    nodes: list[NodeHandle]
    stack: str | None = None  # Pulumi stack name, when the engine is pulumi

    @property
    def head(self) -> NodeHandle:
        return self.nodes[0]

    @property
    def head_ip(self) -> str:
        """The head node's address as `status --ip` prints it and every endpoint starts:
        an IP address, as SkyPilot's (loopback on `local`, whose nodes are `localhost`)."""
        return "127.0.0.1" if self.engine == "local" else self.head.host

    def endpoint(self, port: int) -> str:
        """host:port where the head node serves the task's `port` (loopback on `local`)."""
        host = self.head_ip
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"  # IPv6
        if self.engine == "local":
            return f"{host}:{port}"
        return f"{host}:{self.head.reached_at(port)}"


class ClusterRecord(_Model):
    name: str
    status: ClusterStatus
    spec: ClusterSpec
    handle: ClusterHandle | None = None
    # The task file that owns the cluster: its absolute, resolved path (older records: the
    # path as the plan recorded it). See skyform/plan/ownership.py.
    source: str | None = None
    launched_at: float | None = None
    hourly_price: float  # per node, as recorded when the cluster was applied
    setup_done: str | None = None  # setup digest that has completed on every node
    plan_digest: str | None = None
    job: JobSpec | None = None  # the job apply last started (the plan diff shows its text)
    workdir_files: WorkdirFiles | None = None  # what that job's workdir sync sent
    stopped_at: float | None = None  # when it was stopped (STOPPED), by hand or by autostop
    last_active_at: float | None = None  # STOPPED: its last activity (down_after counts from it)

    @property
    def shown_name(self) -> str:
        """The name to show the user: as typed with -c (`my_cluster`), else its own."""
        return self.spec.shown_name


class JobStatus(str, Enum):
    """The cluster-level job states (SkyPilot's names)."""

    INIT = "INIT"
    PENDING = "PENDING"
    SETTING_UP = "SETTING_UP"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    FAILED_SETUP = "FAILED_SETUP"
    CANCELLED = "CANCELLED"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_JOB_STATUSES

    @property
    def exit_code(self) -> int:
        """What `logs` and `launch` exit with: SkyPilot's JobExitCode for this status."""
        if self is JobStatus.SUCCEEDED:
            return JobExitCode.SUCCEEDED
        if self is JobStatus.CANCELLED:
            return JobExitCode.CANCELLED
        if self.is_terminal:
            return JobExitCode.FAILED
        return JobExitCode.NOT_FINISHED


class JobExitCode(IntEnum):
    """SkyPilot's exit codes for a job's outcome (sky/exceptions.py), so scripts written for
    `sky logs` / `sky launch` read skyform's the same way."""

    SUCCEEDED = 0
    FAILED = 100  # the run or its setup failed
    NOT_FINISHED = 101
    NOT_FOUND = 102
    CANCELLED = 103


TERMINAL_JOB_STATUSES = frozenset(
    {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.FAILED_SETUP, JobStatus.CANCELLED}
)


class ReadyCluster(_Model):
    """What a job's start records on its cluster once the nodes run it (the cluster UP with
    its setup done, the job's text and workdir files: what the next plan compares with).
    Kept on the job until then, so that a command which dies or loses the state store right
    after the submission leaves the next one what to write (lifecycle/settle.py)."""

    setup_done: str | None = None
    job: JobSpec | None = None
    workdir_files: WorkdirFiles | None = None


class JobRecord(_Model):
    cluster: str
    job_id: int  # per cluster, increasing (what `queue` shows)
    name: str
    task_id: str  # stable across recoveries (SKYFORM_TASK_ID)
    status: JobStatus
    submitted_at: float
    started_at: float | None = None
    ended_at: float | None = None
    exit_codes: dict[int, int | None] = {}  # node rank -> exit code (None while running)
    resources: str = ""
    managed_job_id: int | None = None
    recovery_count: int = 0  # part of the node-side job key (exec.node_jobs.run_key)
    # the job runs on the cluster's first N nodes (`exec --num-nodes 1` on 2); None: on all
    num_nodes: int | None = None
    setup_key: str | None = None  # the node-side setup this job ran or waited for, if any
    reason: str = ""  # why it ended as it did, when it never ran (unreachable, interrupted)
    # until its submission is recorded: what it then records on its cluster (apply's jobs)
    cluster_update: ReadyCluster | None = None

    @property
    def never_ran(self) -> bool:
        """Ended (or stuck) before its `run` was submitted: no run output exists."""
        return self.started_at is None


class Event(_Model):
    id: int
    ts: float
    kind: str
    cluster: str | None = None
    job_id: int | None = None
    message: str
    data: dict = {}


class UsageInterval(_Model):
    """One stretch of a cluster existing, at the price recorded when it was applied.

    Cost reports multiply these; they are never repriced from a newer catalog.
    """

    id: int
    cluster: str
    offer: PlacedOffer
    num_nodes: int
    hourly_price: float  # per node
    started_at: float
    ended_at: float | None = None  # None while the cluster is up
    managed_job_id: int | None = None
    reason: str = ""
