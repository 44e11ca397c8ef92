"""Making a plan from a task file: the I/O around the pure planner (files, config, state).

Shared by `plan`, `apply TASK.yaml`, `plan --check` and managed-job recovery, so each of them
plans exactly the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyform.digests import sha256
from skyform.errors import SkyformError, SpecError
from skyform.plan.model import BlockedPlacement, Objective, Plan, WorkdirFiles
from skyform.spec import Dag
from skyform.spec.inputs import NO_INPUTS, TaskInputs

if TYPE_CHECKING:
    from skyform.config import Config
    from skyform.plan.catalog import Catalog
    from skyform.state.snapshot import StateSnapshot


@dataclass(frozen=True)
class PlanResult:
    plan: Plan
    warnings: list[str] = field(default_factory=list)


def plan_dir(out: Path | None) -> Path:
    """The directory a plan's recorded paths start at: its file's (or the current directory
    when the plan is not saved: written to stdout, or applied at once)."""
    return Path(out).resolve().parent if out is not None else Path.cwd()


def recorded_task_path(task_file: Path, out: Path | None) -> str:
    """The task path as the plan records it: relative to the plan file's directory (or to the
    current directory when the plan is not saved), in POSIX form, so plans are portable."""
    return _relative(Path(task_file).resolve(), plan_dir(out))


def _relative(path: Path | str, start: Path) -> str:
    try:
        rel = os.path.relpath(path, start)
    except ValueError:  # another drive on Windows
        rel = str(path)
    return Path(rel).as_posix()


def located(plan: Plan, out: Path | None) -> Plan:
    """`plan` as saved at `out`: where its relative paths start (the base, absolute in a
    fresh plan) recorded relative to the plan file's directory, as its task path is, so a
    clone at another path reads the same plan (spec/portable.py)."""
    folder = plan_dir(out)
    base = plan.task.relative_to
    if base is not None and os.path.isabs(base):
        task = plan.task.model_copy(update={"relative_to": _relative(base, folder)})
        plan = plan.model_copy(update={"task": task})
    return plan.at(folder)


def plan_task(
    task_file: Path,
    *,
    out: Path | None = None,
    objective: Objective = "cost",
    cluster: str | None = None,
    destroy: bool = False,
    blocked: Sequence[BlockedPlacement] = (),
    inputs: TaskInputs = NO_INPUTS,
    refuse_group: str | None = None,
    usable_only: bool = False,
) -> PlanResult:
    """Plan a task file with the flags' `inputs`; `refuse_group` names a verb that cannot
    run a job group (see load_task_text); `usable_only`: place only on infra `skyform
    check` finds usable here (a launch: what it places, it makes now)."""
    from skyform.config import load_config
    from skyform.plan.catalog import load_catalog
    from skyform.plan.catalog.autofetch import fetch_if_due
    from skyform.spec import check_supported, load_task_text
    from skyform.spec.loader import decode_task, read_task_bytes
    from skyform.stacks.registry import nodes_gone
    from skyform.state.snapshot import read_snapshot

    # read once: the digest apply checks is of the very bytes that were planned
    data = read_task_bytes(task_file)
    label = str(task_file)
    dag = load_task_text(
        decode_task(data, label), path_label=label, inputs=inputs, refuse_group=refuse_group
    )
    warnings = list(dag.warnings) + check_supported(dag)
    config = load_config()
    if not destroy:  # SkyPilot's habit: a copy older than its pull period is fetched again
        fetched = fetch_if_due()
        if fetched is not None:
            warnings.append(fetched.note())
    catalog = load_catalog(config)
    if catalog.source.warning:
        warnings.append(catalog.source.warning)
    if not destroy:
        warnings += settle_unrecorded_starts()
    if usable_only and not destroy:
        from skyform.ops.check import unusable_here

        blocked = [*blocked, *unusable_here(dag, config)]
    snapshot = read_snapshot(nodes_gone)
    task_path = recorded_task_path(task_file, out)
    detached = (
        {} if destroy else detached_bucket_mounts(dag, snapshot, task_path, cluster, warnings)
    )
    plan = plan_dag(
        dag,
        snapshot,
        task_path=task_path,
        file_digest=sha256(data),
        objective=objective,
        config=config,
        catalog=catalog,
        cluster=cluster,
        blocked=tuple(blocked),
        destroy=destroy,
        owner=str(Path(task_file).resolve()),
        workdirs={} if destroy or not snapshot.clusters else current_workdirs(dag, task_file),
        buckets={} if destroy else bucket_facts(dag, config),
        bucket_sources={} if destroy else bucket_sources(dag, Path(task_file).parent),
        detached=detached,
    )
    plan = located(plan, out)
    if not destroy:
        check_placed_mounts(plan, dag)
        paths = Path(plan.base_dir() or Path(task_file).resolve().parent)
        check_ssh_destinations(plan, config, snapshot.reserved, paths, dag)
    return PlanResult(plan=plan, warnings=_unique(warnings))


def plan_dag(
    dag: Dag,
    snapshot: StateSnapshot,
    *,
    task_path: str,
    file_digest: str,
    objective: Objective,
    config: Config | None = None,
    catalog: Catalog | None = None,
    **choices: Any,
) -> Plan:
    """The one way a DAG becomes a plan, for `plan` and for a managed job's re-plans: the
    pure planner over the catalog, config and the state snapshot's clusters, reservations
    and lineage. `choices` are the other PlanInputs fields (cluster, blocked, allowed, ...)."""
    from skyform.config import load_config
    from skyform.plan.catalog import load_catalog
    from skyform.plan.planner import PlanInputs, make_plan
    from skyform.spec.portable import portable_dag, recorded_path

    if dag.relative_to is not None:  # the plan records paths inside the base relative to it
        sources = choices.get("bucket_sources") or {}
        choices["bucket_sources"] = {
            recorded_path(k, dag.relative_to): v for k, v in sources.items()
        }
        dag = portable_dag(dag)
    config = config if config is not None else load_config()
    catalog = catalog if catalog is not None else load_catalog(config)
    inputs = PlanInputs(
        dag=dag,
        task_path=task_path,
        file_digest=file_digest,
        objective=objective,
        reserved=snapshot.reserved,
        **choices,
    )
    return make_plan(
        inputs, catalog=catalog, config=config, current=snapshot.clusters, prior=snapshot.prior
    )


def settle_unrecorded_starts() -> list[str]:
    """Cluster jobs whose start no command recorded (it was killed, or lost the state
    store, right after the nodes started them) are settled from their nodes before the
    state is read, so the plan compares with what ran: a job that ran is not planned again
    (lifecycle/settle.py). What cannot be settled now is a warning; the plan then reads the
    record as it is, and apply settles it under the cluster's lock first."""
    from skyform.state.store import open_state, state_exists

    if not state_exists():
        return []
    warnings = []
    with open_state() as db:
        names = db.clusters_with_unstarted_jobs()
        if not names:
            return []
        from skyform.ops.cluster_jobs import settle_jobs

        for name in names:
            record = db.get_cluster(name)
            if record is None:
                continue
            try:
                settle_jobs(db, record)
            except SkyformError as err:
                warnings.append(
                    f"cluster {name}: a job whose start was not recorded could not be settled "
                    f"from its nodes ({err.message}); the plan reads its record as it is"
                )
    return warnings


def bucket_facts(dag: Dag, config) -> dict:
    """The buckets the DAG may use, read now (only when it uses any: boto3 loads lazily)."""
    from skyform.plan.buckets import bucket_uses

    if not bucket_uses(dag):
        return {}
    from skyform.state.store import open_state, state_exists
    from skyform.storage.facts import read_facts

    if not state_exists():
        return read_facts(dag, config, None)
    with open_state() as db:
        return read_facts(dag, config, db)


def bucket_sources(dag: Dag, task_dir: Path) -> dict[str, str]:
    """The digest of every local source a bucket is uploaded from, now."""
    from skyform.plan.buckets import bucket_uses

    uploads = [s for use in bucket_uses(dag) for s in use.spec.uploads]
    if not uploads:
        return {}
    from skyform.storage.sources import source_digests

    return source_digests(uploads, task_dir)


def detached_bucket_mounts(
    dag: Dag,
    snapshot: StateSnapshot,
    task_path: str,
    cluster: str | None,
    warnings: list[str],
) -> dict[str, dict[str, str]]:
    """cluster -> {file mount: mode} of the MOUNT / MOUNT_CACHED buckets a node of an existing,
    running cluster of this task does not have attached (asked on the nodes: one command
    each, only for clusters whose task and last applied job both mount a bucket). A cluster
    whose nodes cannot be asked gets a warning and is taken as it is recorded."""
    from skyform.errors import SkyformError
    from skyform.plan.diff import SETUP_FAILED
    from skyform.plan.mountdiff import FUSED, fused_mounts
    from skyform.plan.naming import cluster_names

    try:
        names = cluster_names([t.name for t in dag.tasks], dag.name, task_path, cluster)
    except SkyformError:
        return {}  # the planner says what is wrong with the names
    asked: dict[str, dict[str, str]] = {}
    for named, task in zip(names, dag.tasks, strict=True):
        current = snapshot.clusters.get(named.name)
        if current is None or current.status not in ("UP", SETUP_FAILED):
            continue
        had = fused_mounts(current.job)
        wanted: dict[str, str] = {
            dst: m.bucket.mode
            for dst, m in task.file_mounts.items()
            if m.bucket is not None and m.bucket.mode in FUSED and had.get(dst) == m.bucket.mode
        }
        if wanted:
            asked[named.name] = wanted
    if not asked:
        return {}
    from skyform.lifecycle.bucketmounts import detached_mounts
    from skyform.state.store import open_state

    found: dict[str, dict[str, str]] = {}
    with open_state() as db:
        for name, mounts in sorted(asked.items()):
            record = db.get_cluster(name)
            if record is None:
                continue
            try:
                missing = detached_mounts(record, mounts)
            except SkyformError as err:
                warnings.append(
                    f"cluster {name!r}: could not check that its bucket mounts are attached "
                    f"({err.message}); a missing one would not show in this plan"
                )
                continue
            if missing:
                found[name] = missing
    return found


def check_placed_mounts(plan: Plan, dag: Dag) -> None:
    """A `local` node is a directory on this machine: it takes mount destinations in its
    home only. Known once the task is placed, so refused now rather than after provisioning."""
    for placement in plan.tasks:
        if placement.offer.cloud != "local":
            continue
        task = dag.tasks[placement.index]
        for dst in sorted(task.file_mounts):
            if dst.startswith("/"):
                raise SpecError(
                    f"file mount destination {dst!r}: task {placement.task!r} is placed on "
                    "`local`, whose nodes are directories on this machine and take "
                    "destinations in their home only",
                    f"Write ~{dst} (the job sees it as $HOME{dst}), or place the task "
                    "elsewhere (resources.infra).",
                    path=task.source.path,
                    line=task.source.line,
                    field=f"file_mounts[{dst!r}]",
                )


def check_ssh_destinations(
    plan: Plan, config: Config, reserved: Mapping[str, str], task_dir: Path, dag: Dag | None = None
) -> None:
    """Absolute file-mount destinations of tasks placed on ssh pools must be makeable by the
    node user on every host the cluster could get (stacks/sshdest.py): refused otherwise,
    naming the hosts and the reason, at `plan` (located in the task file when `dag` is
    given) and again at `apply` before anything is reserved or created."""
    if not any(t.offer.cloud == "ssh" for t in plan.tasks):
        return
    from skyform.errors import PlanError
    from skyform.stacks.sshdest import HINT, describe, destination_problems

    problems = destination_problems(plan.tasks, config, reserved, task_dir)
    if not problems:
        return
    message = f"cannot make the file mount destination(s): {describe(problems)}"
    first = problems[0]
    if dag is None:
        raise PlanError(f"{plan.task.path}: {message}", HINT)
    task = dag.tasks[first.task.index]
    raise SpecError(
        message,
        HINT,
        path=task.source.path,
        line=task.source.line,
        field=f"file_mounts[{first.mount!r}]",
    )


def current_workdirs(dag: Dag, task_file: Path) -> dict[int, WorkdirFiles]:
    """Per task with a local workdir: the files a sync would send now. Only compared with what
    an existing cluster last ran, so they never reach a plan for a cluster being created."""
    from skyform.exec.manifest import workdir_files

    found = {}
    for i, task in enumerate(dag.tasks):
        if isinstance(task.workdir, str):
            path = Path(task.workdir).expanduser()
            files = workdir_files(path if path.is_absolute() else Path(task_file).parent / path)
            if files is not None:
                found[i] = files
    return found


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def refuse_stdin(target: Path) -> None:
    """`apply`, `launch` and `jobs launch` read neither a task nor a plan from stdin: refused
    before anything is created (the refusal reading a task from stdin gives)."""
    from skyform.spec.loader import refuse_stdin as refuse

    refuse(target)
