"""Glue from a loaded task to a Plan: optimize, describe each cluster, diff against state.

Pure: every input (task, catalog, config, current clusters, prior serial) is passed in, and
the same inputs give the same Plan, hence the same plan file bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skyform import __version__
from skyform.config import Config
from skyform.errors import NoOffersError, PlanError
from skyform.plan.buckets import (
    BucketFact,
    bucket_anchors,
    copies_to_refresh,
    merge_anchors,
    planned_buckets,
)
from skyform.plan.capacity import busy_hosts, check_joint_capacity, probes_used
from skyform.plan.catalog import Catalog
from skyform.plan.catalog.k8s_offers import kubernetes_scope
from skyform.plan.containers import check_container_placement, container_image
from skyform.plan.diff import (
    CurrentCluster,
    destroy_changes,
    diff_clusters,
    untouched_clusters,
)
from skyform.plan.model import (
    Alternative,
    BlockedPlacement,
    ClusterSpec,
    EgressFlow,
    KubernetesContext,
    KubernetesProvenance,
    Objective,
    Plan,
    PlannedBucket,
    Prior,
    Summary,
    TaskPlacement,
    TaskSource,
    WorkdirFiles,
)
from skyform.plan.naming import ClusterName, cluster_names
from skyform.plan.ownership import Owner
from skyform.plan.parts import count_actions, count_buckets
from skyform.plan.specs import cluster_spec, job_spec, placed
from skyform.spec import Dag, task_digest
from skyform.spec.overrides import words


@dataclass(frozen=True)
class PlanInputs:
    """Everything a plan is a function of (besides the catalog and config)."""

    dag: Dag
    task_path: str  # as the plan records it: relative to the plan file's directory
    file_digest: str
    objective: Objective = "cost"
    cluster: str | None = None
    blocked: Sequence[BlockedPlacement] = ()
    allowed: Sequence[BlockedPlacement] = ()  # when given: only offers matching one of these
    cluster_names: Sequence[str] | None = None  # explicit names, one per task (managed jobs)
    destroy: bool = False
    owner: str | None = None  # the task file, absolute and resolved (ownership.py)
    # task index -> the files its workdir sync would send now (only tasks with a local workdir)
    workdirs: Mapping[int, WorkdirFiles] = field(default_factory=dict)
    reserved: Mapping[str, str] = field(default_factory=dict)  # ssh host id -> cluster (state)
    buckets: Mapping[str, BucketFact] = field(default_factory=dict)  # read at plan time, by URI
    # local source uploaded into a bucket (as the task file writes it) -> its digest now
    bucket_sources: Mapping[str, str] = field(default_factory=dict)
    # cluster -> {file mount: mode} of the bucket mounts a node of it does not have attached
    # (probed at plan time: mountdiff.py)
    detached: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def _summary(
    plan_changes,
    desired: list[ClusterSpec],
    solution,
    destroy: bool,
    buckets: Sequence[PlannedBucket] = (),
) -> Summary:
    add, change, destroy_n = count_actions(plan_changes)
    buckets_add, buckets_change = count_buckets(buckets)
    before = sum(c.before.hourly_cost for c in plan_changes if c.before is not None)
    after = 0.0 if destroy else sum(s.hourly_cost for s in desired)
    return Summary(
        add=add,
        change=change,
        destroy=destroy_n,
        buckets_add=buckets_add,
        buckets_change=buckets_change,
        hourly_before=before,
        hourly_after=after,
        estimated_cost=0.0 if solution is None else solution.cost,
        estimated_hours=0.0 if solution is None else solution.makespan,
        egress_cost=0.0 if solution is None else solution.egress_cost,
    )


def onprem_scope(dag: Dag) -> list[str]:
    """The on-prem sources a task can be placed on: the ones its plan depends on."""
    scope: set[str] = set()
    for task in dag.tasks:
        for request in task.resources.alternatives():
            if request.cloud == "local":
                scope.add("local")
            elif request.cloud == "ssh":
                scope.add(f"ssh/{request.context}" if request.context else "ssh")
    return sorted(scope)


def kubernetes_provenance(catalog: Catalog, scope: Sequence[str]) -> KubernetesProvenance:
    snapshot = catalog.kubernetes.snapshot(scope)
    return KubernetesProvenance(
        scope=list(snapshot.scope),
        digest="sha256:" + snapshot.digest,
        contexts=[
            KubernetesContext(
                name=c.context, digest="sha256:" + c.digest(), nodes=c.summary(), usable=c.usable
            )
            for c in snapshot.contexts
        ],
        not_considered=[*snapshot.notes, *catalog.kubernetes.miss_notes()],
    )


def make_plan(
    inputs: PlanInputs,
    *,
    catalog: Catalog,
    config: Config,
    current: Mapping[str, CurrentCluster],
    prior: Prior,
) -> Plan:
    dag = inputs.dag
    named = (
        [ClusterName(n) for n in inputs.cluster_names]
        if inputs.cluster_names is not None
        else cluster_names([t.name for t in dag.tasks], dag.name, inputs.task_path, inputs.cluster)
    )
    names = [n.name for n in named]
    owner = Owner(inputs.owner, inputs.task_path) if inputs.owner else None
    source = TaskSource(
        path=inputs.task_path,
        name=dag.name or dag.tasks[0].name,
        file_digest=inputs.file_digest,
        digest="sha256:" + task_digest(dag),
        execution=dag.execution,
        overrides=dict(dag.overrides),
        relative_to=dag.relative_to,
    )
    scope = onprem_scope(dag)
    common: dict[str, Any] = dict(
        skyform_version=__version__,
        objective=inputs.objective,
        task=source,
        catalog_digest="sha256:" + catalog.digest,
        onprem_digest="sha256:" + catalog.onprem_digest_for(scope),
        onprem_scope=scope,
        prior=prior,
        blocked=list(inputs.blocked),
        allowed=list(inputs.allowed),
    )
    if inputs.destroy:
        changes, untouched = destroy_changes(
            names, current, owner=owner, everything_owned=inputs.cluster is None
        )
        return Plan(
            destroy=True,
            changes=changes,
            untouched=untouched,
            summary=_summary(changes, [], None, destroy=True),
            **common,
        )

    from skyform.plan.optimizer import describe_requests, optimize
    from skyform.plan.optimizer.candidates import data_flows

    busy = busy_hosts(inputs.reserved, names)
    _, input_anchors = data_flows(dag)
    from_buckets = bucket_anchors(dag, inputs.buckets, input_anchors)
    try:
        solution = optimize(
            dag,
            catalog,
            objective=inputs.objective,
            blocked=inputs.blocked,
            allowed=inputs.allowed,
            clouds=config.plan.clouds,
            busy=busy,
            anchors=from_buckets,
        )
    except NoOffersError as err:
        pools = {p.removeprefix("ssh/") for p in scope if p.startswith("ssh")}
        mine = {h for h in busy if "ssh" in scope or h.split("/")[1] in pools}
        if mine:
            held = ", ".join(sorted({inputs.reserved[h] for h in mine}))
            err.hint = f"{err.hint or ''} ssh hosts held by other clusters ({held}) are not "
            err.hint += "offered: `skyform down NAME` frees them."
        if dag.overrides:  # the flags, not the file, may be what nothing matches
            flags = " ".join(words(dag.overrides))
            err.hint = f"{err.hint or ''} The task was planned with {flags}: change or drop them."
        raise
    anchors = merge_anchors(input_anchors, from_buckets)

    def inputs_egress(task: int, offer) -> float:
        """What pulling the task's anchored inputs to `offer` costs (the table's EGRESS)."""
        return sum(
            catalog.egress.cost(a.location, offer.location, a.gigabytes)
            for a in anchors
            if a.task == task
        )

    requests = [r for task in dag.tasks for r in task.resources.alternatives()]
    k8s_scope = kubernetes_scope(requests, config.plan.clouds)
    if k8s_scope:
        common["kubernetes"] = kubernetes_provenance(catalog, k8s_scope)
    placements: list[TaskPlacement] = []
    desired: list[ClusterSpec] = []
    labels = [t.label(i) for i, t in enumerate(dag.tasks)]
    for result in solution.tasks:
        task = dag.tasks[result.index]
        cand = result.candidate
        request = task.resources.groups[cand.group][cand.request]
        offer = placed(cand.offer)
        job = job_spec(task, labels[result.index], offer)
        try:
            spec = cluster_spec(
                names[result.index],
                request,
                offer,
                cand.num_nodes,
                job,
                task.skyform,
                shown_as=named[result.index].shown,
            )
            image = container_image(spec.image_id, offer.cloud)
            if image is not None:
                runtimes = catalog.container_runtimes(cand.offer.id)
                check_container_placement(spec.name, image, offer.cloud, offer.context, runtimes)
        except PlanError as err:  # where in the file: the task's resources
            src = task.source
            line = src.resources_line or src.line
            err.message = f"{src.path}:{line}:{src.resources_column or 1}: {err.message}"
            raise
        desired.append(spec)
        alternatives = [
            Alternative(
                offer=placed(c.offer),
                hourly_cost=c.hourly_cost,
                estimated_cost=c.cost,
                estimated_hours=c.hours,
                chosen=c == cand,
                egress_cost=inputs_egress(result.index, c.offer),
            )
            for c in result.considered
        ]
        placements.append(
            TaskPlacement(
                task=labels[result.index],
                index=result.index,
                cluster=names[result.index],
                cluster_name_from=named[result.index].made_from,
                num_nodes=cand.num_nodes,
                depends_on=[labels[p] for p in dag.parents(result.index)],
                request=describe_requests(task.resources.groups),
                offer=offer,
                hourly_cost=cand.hourly_cost,
                estimated_hours=cand.hours,
                estimated_cost=cand.cost,
                start_hours=result.start,
                finish_hours=result.finish,
                alternatives=alternatives,
                job=job,
            )
        )
    placements.sort(key=lambda p: p.index)
    check_joint_capacity(placements, catalog, inputs.reserved, busy)
    egress = [
        EgressFlow(
            src_task=labels[f.src_task] if f.src_task is not None else (f.label or "inputs"),
            dst_task=labels[f.dst_task],
            gigabytes=f.gigabytes,
            src_infra=_infra(f.source),
            dst_infra=_infra(f.destination),
            cost=f.cost,
            seconds=f.seconds,
            upper_bound=f.src_task is None and f.source.region is None and f.cost > 0,
        )
        for f in solution.flows
        if f.gigabytes > 0 and (f.cost > 0 or f.seconds > 0)
    ]
    buckets = planned_buckets(
        dag,
        {p.index: p.offer for p in placements},
        {p.index: p.cluster for p in placements},
        inputs.buckets,
        config.storage.region,
        inputs.bucket_sources,
    )
    order = {p.cluster: p.index for p in placements}
    desired.sort(key=lambda s: order[s.name])
    jobs = {p.cluster: p.job for p in placements}
    changes = diff_clusters(
        desired,
        current,
        owner=owner,
        jobs=jobs,
        workdirs={names[i]: files for i, files in inputs.workdirs.items()},
        refresh=copies_to_refresh(buckets, jobs),
        detached=inputs.detached,
    )
    return Plan(
        tasks=placements,
        egress=egress,
        changes=changes,
        untouched=untouched_clusters(names, current, owner),
        host_probes=probes_used(catalog, scope),
        buckets=buckets,
        summary=_summary(changes, desired, solution, destroy=False, buckets=buckets),
        **common,
    )


def _infra(location) -> str:
    parts = [location.cloud, location.region, location.zone]
    return "/".join(p for p in parts if p)
