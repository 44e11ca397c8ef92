"""The use cases behind `serve up`, `serve update`, `serve status` and `serve down`: register a
service and start its controller, hand it a new version, read its state, tear it down."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from skyform.errors import SkyformError
from skyform.ops.serve.plan import ServicePlanResult
from skyform.serve import sandbox, state, versions
from skyform.serve.updates import UpdatePreview
from skyform.spec.service_models import ReplicaPolicy

REGISTER_TIMEOUT_SECONDS = 60.0
DOWN_TIMEOUT_SECONDS = 300.0
UPDATE_TIMEOUT_SECONDS = 60.0


def check_can_serve(result: ServicePlanResult) -> None:
    """What `serve up` needs before it starts a controller: replicas on this machine each
    get a network namespace; replicas on clouds (one Pulumi stack per replica cluster) need
    the provider SDK and the Pulumi CLI, or every launch would fail the same way."""
    import importlib.util
    import shutil

    from skyform.infra import infra

    places = {s.infra.split("/")[0] for s in result.plan.replicas}
    for place in sorted(places):
        row = infra(place)
        if row is None:
            raise SkyformError(
                f"this service places replicas on {place}, which skyform does not run on",
                "Set resources.infra to one it does.",
            )
        if row.sdk_module and importlib.util.find_spec(row.sdk_module) is None:
            raise SkyformError(
                f"replicas on {place} are Pulumi stacks, and {row.sdk_module} is not installed",
                f"pip install 'skyform[{row.pip_extra}]'",
            )
        if row.engine == "pulumi" and shutil.which("pulumi") is None:
            raise SkyformError(
                f"replicas on {place} are Pulumi stacks, and the pulumi CLI is not on PATH",
                "Install it: curl -fsSL https://get.pulumi.com | sh (or review the service "
                "with skyform serve plan).",
            )
    why = sandbox.available()
    if "local" in places and why is not None:
        raise SkyformError(
            f"replicas on this machine each need their own network namespace: {why}",
            "Run skyform as root (network namespaces need CAP_NET_ADMIN).",
        )


def _version(
    number: int, task_file: Path, envs: dict[str, str], overrides: dict[str, str], mode: str
) -> versions.VersionRecord:
    from skyform.spec.loader import decode_task, read_task_bytes

    label = str(task_file)
    return versions.VersionRecord(
        number=number,
        task_path=str(Path(task_file).resolve()),
        task_text=decode_task(read_task_bytes(label), label),
        envs=envs,
        overrides=overrides,
        mode=mode,
        base_dir=str(Path.cwd()),  # relative paths start here, as the service's plan read them
    )


def up(
    result: ServicePlanResult,
    task_file: Path,
    envs: dict[str, str],
    secrets: dict[str, str],
    overrides: dict[str, str] | None = None,
    *,
    emit: Callable[[str], None] = lambda _line: None,
) -> state.ServiceRecord:
    """Register the service and see that a controller drives it: a controller service
    (`skyform controller run`) adopts it when one is registered, else a controller starts
    here (`emit` says which); returns once the endpoint is known."""
    name = result.plan.service
    row = state.row_of(name)
    existing = state.read_record(name) if row is not None and state.runs_here(row) else None
    if existing is not None:
        if state.controller_alive(name):
            raise SkyformError(
                f"service {name!r} is already running",
                f"To update it, run: skyform serve update {name} {task_file}",
            )
        raise SkyformError(
            f"service {name!r} exists but its controller is not running ({existing.status})",
            f"Clean it up with: skyform serve down {name} --purge",
        )
    record = state.ServiceRecord(
        name=name,
        task_path=str(Path(task_file).resolve()),
        created_at=time.time(),
        autoscaling=result.plan.autoscaling,
        load_balancing_policy=result.plan.load_balancing_policy,
    )
    state.create_record(record)  # the store's key decides: a second home is refused here
    state.make_dir(name)
    versions.save(name, _version(1, task_file, envs, overrides or {}, "rolling"))
    adopter = _adopter(name, secrets)
    if adopter is not None:
        emit(f"Submitted: controller {adopter} will adopt it")
    else:
        emit(
            f"No controller service runs: started a local controller (pid {_spawn(name, secrets)})"
        )
    deadline = time.monotonic() + REGISTER_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        current = state.read_record(name)
        if current is not None and current.endpoint:
            return current
        if current is not None and current.status == state.ServiceStatus.CONTROLLER_FAILED:
            break
        time.sleep(0.1)
    current = state.read_record(name)
    reason = current.reason if current is not None else ""
    raise SkyformError(
        f"the controller of service {name!r} did not start{': ' + reason if reason else ''}",
        f"See skyform serve logs {name} --controller; clean up with skyform serve down "
        f"{name} --purge",
    )


def _adopter(name: str, secrets: dict[str, str]) -> str | None:
    """A registered controller service that will adopt the new service (user@host:pid), its
    secrets sealed into the store for it; None: none runs, or the secrets cannot be sealed
    (no SKYFORM_PASSPHRASE), so a controller here must hold them."""
    from skyform.controllers.lease import SERVICES
    from skyform.controllers.loop import registered
    from skyform.serve import sealed
    from skyform.state.db import open_state

    with open_state() as db:
        services = registered(db)
        if not services or (secrets and not sealed.seal_versions(db, name, {1: secrets})):
            return None
        return services[0].name.removeprefix(SERVICES)


def update_mode(mode: str) -> str:
    """`--mode` as the versions record it (`blue-green` and any case accepted)."""
    chosen = mode.lower().replace("-", "_")
    if chosen not in versions.MODES:
        raise SkyformError(f"--mode {mode!r} is not one of: {', '.join(versions.MODES)}")
    return chosen


def running_for_update(name: str) -> state.ServiceRecord:
    record = state.require(name)
    if not state.controller_alive(name):
        raise SkyformError(
            f"the controller of service {name!r} is not running ({record.status})",
            f"Bring it up again: skyform serve down {name} --purge, then skyform serve up",
        )
    if (
        record.status in (state.ServiceStatus.CONTROLLER_INIT, state.ServiceStatus.SHUTTING_DOWN)
        or not record.endpoint
    ):
        raise SkyformError(f"service {name!r} is {record.status}: it cannot be updated now",
                           "Wait until skyform serve status shows it up, then retry.")  # fmt: skip
    return record


def preview(
    name: str, new_version: int, mode: str, policy: ReplicaPolicy, why_new: str | None
) -> UpdatePreview:
    """What the update will do to the replicas now running (updates.preview_update): the
    new version's target is its autoscaler's under the live traffic, as the controller
    computes it, and is handed to the controller with the update (`update`)."""
    from skyform.serve.autoscaler import Autoscaler, ReplicaView
    from skyform.serve.replicas import ReplicaStatus
    from skyform.serve.rollout import service_qps
    from skyform.serve.updates import preview_update

    record = state.require(name)
    views = [
        ReplicaView(r.replica_id, r.version, ReplicaStatus(r.status), r.is_spot)
        for r in record.replicas
    ]
    qps = service_qps(name)
    scaler = Autoscaler(policy)
    scaler.updated(policy, qps)
    return preview_update(name, views, record.version, new_version, mode, scaler, why_new, qps)


def reuse_check(
    name: str, task_file: Path, envs: dict[str, str], overrides: dict[str, str]
) -> tuple[int, str | None]:
    """The new version's number, and why its replicas cannot be the running ones relabelled
    (None: they can)."""
    from skyform.serve.replica_launch import replica_digest, reuse_blocker

    record = state.require(name)
    current = versions.load(name, record.version)
    number = versions.next_number(name)
    new = versions.inputs_of(name, _version(number, task_file, envs, overrides, "rolling"), {})
    if current is None:
        return number, "the running version's task was not saved"
    blocker = reuse_blocker(new)
    if blocker is None and replica_digest(new) != replica_digest(
        versions.inputs_of(name, current, {})
    ):
        blocker = "the replicas' task changed (not only service:)"
    return number, blocker


def update(
    name: str,
    number: int,
    task_file: Path,
    envs: dict[str, str],
    secrets: dict[str, str],
    overrides: dict[str, str],
    mode: str,
    target: int | None = None,
) -> str:
    """Save version `number` and hand it to the controller, with the autoscaler target its
    preview showed; returns the controller's notes (warnings)."""
    from skyform.serve import control

    sealed = control.sealed_secrets(name, secrets)  # refused before anything is saved
    versions.save(name, _version(number, task_file, envs, overrides, mode))
    request: dict[str, object] = {"version": number, "target": target, **sealed}
    answer = control.ask(name, "update", request, UPDATE_TIMEOUT_SECONDS)
    if not answer.get("ok"):
        versions.forget(name, number)
        raise SkyformError(
            f"service {name!r} was not updated: {answer.get('error', 'no answer')}",
            str(answer.get("hint") or f"See skyform serve logs {name} --controller"),
        )
    return str(answer.get("note") or "")


def down_replica(name: str, replica_id: int, *, purge: bool) -> str:
    """`serve down NAME --replica-id N`: the controller tears that replica down (drained,
    as a scale-down) and replaces it if the service is below its target; returns what it
    said."""
    from skyform.serve import control

    record = state.require(name)
    if not state.controller_alive(name):
        raise SkyformError(
            f"the controller of service {name!r} is not running ({record.status})",
            f"Tear down what is left with: skyform serve down {name} --purge",
        )
    request: dict[str, object] = {"replica_id": replica_id, "purge": purge}
    answer = control.ask(name, "terminate", request, UPDATE_TIMEOUT_SECONDS)
    if not answer.get("ok"):
        hint = str(answer.get("hint") or f"See skyform serve status {name}")
        raise SkyformError(f"service {name!r}: {answer.get('error', 'no answer')}", hint)
    return str(answer.get("note") or "")


def _spawn(name: str, secrets: dict[str, str]) -> int:
    out = open(state.service_dir(name) / "controller.log", "ab")  # noqa: SIM115 - to the child
    try:
        env = dict(os.environ)
        # secrets reach the controller in memory only, never in a file
        env["SKYFORM_SERVE_SECRETS"] = json.dumps(secrets)
        proc = subprocess.Popen(
            [sys.executable, "-m", "skyform.ops.serve.controller", name],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=env,
        )
    finally:
        out.close()
    return proc.pid


def statuses(names: list[str]) -> list[state.ServiceRecord]:
    chosen = names or state.list_services()
    out = []
    for name in chosen:
        record = state.require(name)
        settled = (
            state.ServiceStatus.CONTROLLER_INIT,
            state.ServiceStatus.FAILED_CLEANUP,
            state.ServiceStatus.CONTROLLER_FAILED,
        )
        if record.status not in settled and not state.controller_alive(name):
            record = record.model_copy(update={"status": state.ServiceStatus.CONTROLLER_FAILED})
        out.append(record)
    return out


def to_tear_down(names: list[str], *, every: bool) -> list[str]:
    """The services `serve down NAMES` or `serve down --all` acts on (each must exist)."""
    if every == bool(names):
        raise SkyformError("name services or pass -a/--all (one of them)")
    chosen = state.list_services() if every else names
    for name in chosen:
        state.require(name)
    return chosen


def down(name: str, *, purge: bool, emit: Callable[[str], None]) -> None:
    """Ask the service's controller (any home's, through the store) to tear it down and
    wait until it has; `purge`: tear down what is left when it is not running."""
    from skyform.serve import control

    record = state.require(name)
    if state.controller_alive(name):
        answer = control.ask(name, "down", {}, UPDATE_TIMEOUT_SECONDS)
        deadline = time.monotonic() + DOWN_TIMEOUT_SECONDS
        while answer.get("ok") and time.monotonic() < deadline:
            current = state.read_record(name)
            if current is None:
                return
            if current.status == state.ServiceStatus.FAILED_CLEANUP and not state.controller_alive(
                name
            ):
                break
            time.sleep(0.2)
        current = state.read_record(name)
        if current is None:
            return
        if not purge:
            why = "" if answer.get("ok") else f": {answer.get('error')}"
            raise SkyformError(
                f"service {name!r} was not torn down cleanly ({current.status} "
                f"{current.reason}){why}",
                f"Retry, or forget it with: skyform serve down {name} --purge",
            )
    elif not purge:
        raise SkyformError(
            f"the controller of service {name!r} is not running ({record.status})",
            f"Tear down what is left with: skyform serve down {name} --purge",
        )
    _purge(name, emit)


def _purge(name: str, emit: Callable[[str], None]) -> None:
    from socket import gethostname

    from skyform.ops.serve.replica_clusters import teardown
    from skyform.serve import lb_process, sealed
    from skyform.state.db import open_state

    record = state.read_record(name)
    for replica in record.replicas if record is not None else []:
        if replica.cluster and not teardown(replica.cluster, emit):
            emit(f"replica cluster {replica.cluster} may be left: skyform down {replica.cluster}")
        if replica.sandbox is not None:
            sandbox.destroy(sandbox.Sandbox(replica.sandbox))
    ports = state.service_dir(name) / "lb.ports.json"
    if record is not None and record.lb_pid is not None and record.lb_host == gethostname():
        lb_process.stop(record.lb_pid)  # it outlives its controller; its workers die with it
    elif ports.exists():  # an LB recorded by an older skyform, without its pid
        for pid in _lb_pids(name):  # the LB and the worker processes it forked
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
    with open_state() as db:
        sealed.forget(db, name)
    state.remove(name)


def _lb_pids(name: str) -> list[int]:
    config = state.service_dir(name) / "lb.json"
    try:
        out = subprocess.run(
            ["pgrep", "-f", f"skyform.serve.lb {config}"], capture_output=True, text=True
        ).stdout.split()
    except FileNotFoundError:
        return []
    return [int(pid) for pid in out]
