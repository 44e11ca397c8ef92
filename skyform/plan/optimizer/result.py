"""Turn a chosen assignment into a `Solution`: schedule, egress flows and totals."""

from __future__ import annotations

from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import SECONDS_PER_HOUR, Flow, Solution, TaskResult


def build_solution(
    prep: Prepared, choice: list[int], method: str, stats: dict[str, int] | None = None
) -> Solution:
    problem = prep.problem
    flows: list[Flow] = []
    for anchor in problem.anchors:
        if anchor.gigabytes <= 0:
            continue
        destination = prep.loc[anchor.task][choice[anchor.task]]
        usd, hours = prep.transfer(anchor.location, destination, anchor.gigabytes)
        flows.append(
            Flow(
                src_task=None,
                dst_task=anchor.task,
                source=anchor.location,
                destination=destination,
                gigabytes=anchor.gigabytes,
                cost=usd,
                seconds=hours * SECONDS_PER_HOUR,
                label=anchor.label,
            )
        )
    start = [0.0] * prep.n
    finish = [0.0] * prep.n
    for v in prep.order:
        begin = 0.0
        for k in prep.parents[v]:
            u, _, gb = prep.edges[k]
            usd, hours = prep.edge_transfer(k, choice[u], choice[v])
            begin = max(begin, finish[u] + hours)
            if gb > 0:
                flows.append(
                    Flow(
                        src_task=u,
                        dst_task=v,
                        source=prep.loc[u][choice[u]],
                        destination=prep.loc[v][choice[v]],
                        gigabytes=gb,
                        cost=usd,
                        seconds=hours * SECONDS_PER_HOUR,
                    )
                )
        start[v] = begin
        finish[v] = begin + prep.dur[v][choice[v]]
    flows.sort(key=lambda f: (f.dst_task, -1 if f.src_task is None else f.src_task, f.label))
    compute = sum(problem.tasks[v].candidates[choice[v]].cost for v in range(prep.n))
    egress = sum(f.cost for f in flows)
    cost = compute + egress
    makespan = max(finish, default=0.0)
    tasks = tuple(
        TaskResult(
            index=v,
            name=problem.tasks[v].name,
            choice=choice[v],
            candidate=problem.tasks[v].candidates[choice[v]],
            start=start[v],
            finish=finish[v],
            duration=prep.dur[v][choice[v]],
            considered=considered(prep, v, choice[v]),
        )
        for v in range(prep.n)
    )
    return Solution(
        objective=problem.objective,
        tasks=tasks,
        value=cost if problem.objective == "cost" else makespan,
        cost=cost,
        compute_cost=compute,
        egress_cost=egress,
        makespan=makespan,
        flows=tuple(flows),
        method=method,
        stats=dict(stats or {}),
    )


def considered(prep: Prepared, v: int, chosen: int) -> tuple:
    """The "considered resources" rows of task v: among the candidates of the chosen resource
    group, the best per (cloud, accelerator, count, spot) in rank order — the chosen candidate
    standing for its own group — sorted best first."""
    cands = prep.problem.tasks[v].candidates
    mine = cands[chosen]

    def group(i: int) -> tuple:
        o = cands[i].offer
        return o.cloud, o.accelerator, o.accelerator_count, o.spot

    rows: dict[tuple, int] = {group(chosen): chosen}
    for i in prep.rank[v]:
        if cands[i].group == mine.group:
            rows.setdefault(group(i), i)
    return tuple(cands[i] for i in sorted(rows.values(), key=lambda i: prep.pos[v][i]))
