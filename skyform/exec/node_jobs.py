"""Job records on one node: the uploaded runner script and the per-job state files it keeps.

Layout on a node (relative to its home):
    .skyform_node/runner.sh          the rendered templates/runner.sh.j2 (checked by sha256)
    .skyform_node/jobs/<key>/        env script cwd launched pid log cancelled result
Everything here is one command per call on an open NodeRunner; no daemon runs on the node.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cache

from skyform.errors import ExecError
from skyform.exec.runner import CommandResult, NodeRunner
from skyform.exec.templating import digest, render

NODE_BASE = ".skyform_node"
RUNNER = f"~/{NODE_BASE}/runner.sh"
WORKDIR = "skyform_workdir"  # ~/skyform_workdir: where the workdir lands and jobs start
KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class NodeJobState(str, Enum):
    PENDING = "PENDING"  # launched a moment ago, runner not up yet
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    MISSING = "MISSING"  # no record of the job on this node

    @property
    def is_terminal(self) -> bool:
        return self in (NodeJobState.SUCCEEDED, NodeJobState.FAILED, NodeJobState.CANCELLED)


@dataclass(frozen=True)
class NodeJob:
    """One job's state on one node, as its files say."""

    key: str
    state: NodeJobState
    exit_code: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class NodeFacts:
    rsync: bool  # the node has rsync (else workdir sync falls back to SFTP)
    rsync_about: str = ""  # the first line of its `rsync --version` (sync reads the version)


# --- keys ------------------------------------------------------------------------------


def _safe(text: str) -> str:
    return _SAFE.sub("-", text).strip("-.") or "x"


def cluster_prefix(cluster: str) -> str:
    """What every job key of the cluster starts with (then a dash): the autostop agent
    looks at these jobs only."""
    return _safe(cluster)


def run_key(cluster: str, job_id: int | str, recovery_count: int = 0) -> str:
    """A run's key on the nodes. Pool hosts outlive clusters, so the cluster name is part of it."""
    key = f"{cluster_prefix(cluster)}-{_safe(str(job_id))}"
    return f"{key}-r{recovery_count}" if recovery_count else key


def setup_key(cluster: str, setup_digest: str) -> str:
    """Setup runs once per (cluster, setup digest): this key is its marker."""
    return f"{cluster_prefix(cluster)}-setup-{_safe(setup_digest)[:16]}"


def check_key(key: str) -> str:
    if not KEY.match(key):
        raise ExecError(
            f"job key {key!r} must be 1-128 of A-Z a-z 0-9 . _ - (not starting with . - _)"
        )
    return key


def log_path(key: str) -> str:
    """Where a job's log (stdout + stderr) lives on each node."""
    return f"~/{NODE_BASE}/jobs/{check_key(key)}/log"


# --- the runner script -------------------------------------------------------------------


@cache
def runner_script() -> str:
    return render("runner.sh.j2", base=NODE_BASE)


def install_command(script: str, name: str, *, subdir: str = "") -> str:
    """Shell that writes `script` (given on stdin) to ~/NODE_BASE/`name` unless the file
    already holds those bytes, atomically (temp + rename): one round trip either way."""
    base = f"$HOME/{NODE_BASE}"
    tmp = f'"{base}/.{name.removesuffix(".sh")}.tmp.$$"'
    return (
        f'mkdir -p "{base}{subdir}" && chmod 700 "{base}" && '
        f'h=$(sha256sum < "{base}/{name}" 2>/dev/null); '
        f'if [ "${{h%% *}}" != {digest(script)} ]; then '
        f'cat > {tmp} && chmod 700 {tmp} && mv -f {tmp} "{base}/{name}" || exit 3; fi'
    )


def install_failed(runner: NodeRunner, what: str, result: CommandResult) -> ExecError:
    return ExecError(
        f"{runner.label}: cannot install {what} in ~/{NODE_BASE}: "
        f"{result.stderr.strip() or f'exit code {result.exit_code}'}",
        hint="check free disk space and that the home directory is writable",
    )


def prepare_node(runner: NodeRunner) -> NodeFacts:
    """Install the runner if its content changed (one round trip either way); probe rsync
    and its version (whether it can compare mtimes to the nanosecond: exec.sync)."""
    script = runner_script()
    cmd = install_command(script, "runner.sh", subdir="/jobs") + (
        "; if command -v rsync >/dev/null 2>&1; then"
        ' echo "rsync=yes $(rsync --version 2>/dev/null | head -n 1)"; else echo rsync=no; fi'
    )
    result = runner.run(cmd, stdin=script)
    if not result.ok:
        raise install_failed(runner, "the job runner", result)
    probe = next((ln for ln in result.stdout.splitlines() if ln.startswith("rsync=")), "")
    found = probe.startswith("rsync=yes")
    return NodeFacts(rsync=found, rsync_about=probe.removeprefix("rsync=yes").strip())


def _runner_cmd(*args: str | int) -> str:
    return "bash " + f'"$HOME/{NODE_BASE}/runner.sh" ' + " ".join(shlex.quote(str(a)) for a in args)


# --- parsing the runner's answers -----------------------------------------------------------


def _num(text: str, kind: type) -> float | int | None:
    try:
        return kind(text)
    except ValueError:
        return None


def parse_status_line(line: str) -> NodeJob:
    """`KEY STATE EXIT STARTED ENDED REASON...` (`-` = unknown)."""
    parts = line.split(" ", 5)
    if len(parts) < 6 or parts[1] not in NodeJobState.__members__:
        raise ExecError(f"unexpected answer from the node's job runner: {line[:200]!r}")
    key, state, code, started, ended, reason = parts
    return NodeJob(
        key=key,
        state=NodeJobState(state),
        exit_code=_num(code, int),  # type: ignore[arg-type]
        started_at=_num(started, float),
        ended_at=_num(ended, float),
        reason=None if reason.strip() == "-" else reason.strip(),
    )


def _answer(runner: NodeRunner, result, what: str) -> list[str]:
    if not result.ok:
        raise ExecError(
            f"{runner.label}: the job runner failed to {what} "
            f"(exit code {result.exit_code}): {result.stderr.strip()[-300:]}"
        )
    return result.stdout.splitlines()


# --- operations ------------------------------------------------------------------------------


def launch(
    runner: NodeRunner,
    key: str,
    *,
    env_file: str,
    script: str,
    cwd: str = "",
    rerun_failed: bool = False,
    prepare: Callable[[int], object] | None = None,
    container: str = "",
) -> NodeJob:
    """Start a detached job unless one with `key` exists (then report it; with `rerun_failed`
    a FAILED or CANCELLED one is set aside and started again). Env and script go on stdin.
    `container` ("RUNTIME... NAME", exec/container.py): run it inside that container.

    `prepare` (prepare_node for a rank) is for a node not prepared yet: the check that its
    runner is this version goes in the launch's round trip; when it is not, nothing starts,
    `prepare(rank)` installs it and the job is launched then."""
    guard = ""
    if prepare is not None:
        base = f"$HOME/{NODE_BASE}"
        guard = (
            f'h=$(sha256sum < "{base}/runner.sh" 2>/dev/null); '
            f'if [ "${{h%% *}}" != {digest(runner_script())} ]; then '
            f"cat >/dev/null; echo {RUNNER_MISSING}; exit 0; fi; "
        )
    args = (key, env_file, script, cwd, rerun_failed, container)
    job = _launch(runner, *args, guard=guard)
    if job is None:
        assert prepare is not None
        prepare(runner.node.rank)
        job = _launch(runner, *args, guard="")
    assert job is not None
    return job


RUNNER_MISSING = "runner-not-current"


def _launch(
    runner: NodeRunner,
    key: str,
    env_file: str,
    script: str,
    cwd: str,
    rerun: bool,
    container: str,
    *,
    guard: str,
) -> NodeJob | None:
    check_key(key)
    env_bytes = env_file.encode()
    payload = f"{len(env_bytes)}\n".encode() + env_bytes + script.encode()
    box = (container,) if container else ()
    result = runner.run(guard + _runner_cmd("launch", key, cwd, int(rerun), *box), stdin=payload)
    lines = _answer(runner, result, "launch a job")
    first = lines[0] if lines else ""
    verb, _, rest = first.partition(" ")
    if guard and first == RUNNER_MISSING:
        return None
    if verb == "started":
        return NodeJob(key, NodeJobState.RUNNING)
    if verb == "exists":
        return parse_status_line(rest)
    if verb == "error":
        return NodeJob(key, NodeJobState.FAILED, reason=f"could not start the job: {rest}")
    raise ExecError(f"{runner.label}: unexpected answer from the job runner: {first[:200]!r}")


def status(runner: NodeRunner, keys: list[str]) -> dict[str, NodeJob]:
    result = runner.run(_runner_cmd("status", *map(check_key, keys)))
    jobs = [parse_status_line(line) for line in _answer(runner, result, "read job status")]
    return {job.key: job for job in jobs}


def wait(runner: NodeRunner, key: str, seconds: int) -> NodeJob:
    """Block on the node until the job ends or `seconds` pass; its state either way."""
    result = runner.run(
        _runner_cmd("wait", max(1, int(seconds)), check_key(key)),
        timeout=seconds + runner.timeouts.command,
    )
    lines = _answer(runner, result, "wait for a job")
    return parse_status_line(lines[-1] if lines else "")


def read_log(
    runner: NodeRunner, key: str, offset: int, max_bytes: int, wait: float = 0
) -> tuple[NodeJob, bytes, int]:
    """(state, bytes from `offset`, new offset). When state is terminal the log is complete.
    With `wait` (seconds), the node answers once there are new bytes or the job has ended,
    or after `wait` seconds."""
    ticks = [round(wait * 20)] if wait > 0 else []
    result = runner.run(
        _runner_cmd("log", check_key(key), offset, max_bytes, *ticks),
        timeout=wait + runner.timeouts.command,
    )
    _answer(runner, result, "read a job log")
    status_line, _, rest = result.raw_stdout.partition(b"\n")
    end_line, _, data = rest.partition(b"\n")
    job = parse_status_line(status_line.decode(errors="replace"))
    end = _num(end_line.decode(errors="replace").strip(), int)
    if end is None:
        raise ExecError(f"{runner.label}: unexpected log answer from the job runner")
    return job, data, int(end)


def tail_offset(runner: NodeRunner, key: str, lines: int) -> int:
    """Where the last `lines` lines of the job's log start (`tail -n`), in bytes; 0 when
    there is no log yet. Measured on the log as it is now, so a line the job writes
    meanwhile is read after these, never cut in two."""
    log = f'"$HOME/{NODE_BASE}/jobs/{check_key(key)}/log"'
    result = runner.run(
        f"s=$(wc -c < {log} 2>/dev/null) || s=0; "
        f'echo $(( s - $(head -c "$s" {log} 2>/dev/null | tail -n {int(lines)} | wc -c) ))'
    )
    offset = _num(result.stdout.strip(), int) if result.ok else None
    if offset is None:
        raise ExecError(f"{runner.label}: cannot measure the end of the job's log")
    return max(0, int(offset))


def setup_log_key(job_key: str) -> str:
    """Where a job keeps the copy of the setup output it ran (or waited for)."""
    return check_key(f"{job_key}.setup")


def keep(runner: NodeRunner, key: str, copy: str) -> None:
    """Copy job `key`'s log and result under `copy` (replacing an older copy)."""
    result = runner.run(_runner_cmd("keep", check_key(key), check_key(copy)))
    _answer(runner, result, "keep a job log")


def cancel(runner: NodeRunner, key: str, grace: int = 5) -> NodeJob:
    """TERM the job's process group, KILL after `grace` s; the job ends CANCELLED."""
    result = runner.run(
        _runner_cmd("cancel", check_key(key), max(0, int(grace))),
        timeout=grace + 10 + runner.timeouts.command,
    )
    lines = _answer(runner, result, "cancel a job")
    return parse_status_line(lines[-1] if lines else "")


def launch_message(job: NodeJob) -> str:
    if job.reason and job.state is NodeJobState.FAILED:
        return f"failed to start: {job.reason}"
    if job.state is NodeJobState.SUCCEEDED and job.started_at is not None:
        return "already done"
    if job.state is NodeJobState.RUNNING and job.started_at is not None:
        return "already running (started earlier); waiting for it"
    return "started" if job.state is NodeJobState.RUNNING else job.state.value.lower()
