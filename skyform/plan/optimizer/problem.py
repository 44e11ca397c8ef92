"""The optimizer's abstract input and output: tasks with candidates, data edges, the answer.

Nothing here knows about task YAML or the catalog's files: a `Problem` is plain numbers and
`Offer`s, so the solvers can be tested (and cross-checked against brute force) on their own.

Time model (hours): a task's duration is the time to pull its inbound data from fixed places
(`Anchor`s) plus its estimated run time; it starts when every parent has finished and that
parent's outputs have reached it. The makespan is the latest finish.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from skyform.plan.catalog.offer import Location, Offer

Objective = Literal["cost", "time"]
OBJECTIVES: tuple[Objective, ...] = ("cost", "time")
SECONDS_PER_HOUR = 3600.0
REL_TOL = 1e-9  # two objective values closer than this (relative, floor 1.0) are equal


def tol(value: float) -> float:
    return REL_TOL * max(1.0, abs(value))


def same(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b))


class TransferLike(Protocol):
    @property
    def cost(self) -> float: ...  # USD

    @property
    def seconds(self) -> float: ...


# (source, destination, gigabytes) -> what moving the data costs and takes.
EgressFn = Callable[[Location, Location, float], TransferLike]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way to run a task: `num_nodes` of `offer` for `hours`.

    `group` is the index of the resource group (`ResourceChoices.groups`) it came from and
    `request` the index of the request within that group.
    """

    offer: Offer
    num_nodes: int = 1
    hours: float = 1.0
    group: int = 0
    request: int = 0

    @property
    def hourly_cost(self) -> float:
        return self.offer.hourly_price * self.num_nodes

    @property
    def cost(self) -> float:
        return self.hourly_cost * self.hours

    @property
    def location(self) -> Location:
        return self.offer.location


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class Edge:
    """`dst` runs after `src` and receives `gigabytes` of its outputs."""

    src: int
    dst: int
    gigabytes: float = 0.0


@dataclass(frozen=True, slots=True)
class Anchor:
    """`gigabytes` of input stored at a fixed `location` (a bucket), pulled by `task` when it
    starts. `label` names the data for display (e.g. the bucket URI)."""

    task: int
    location: Location
    gigabytes: float
    label: str = ""


@dataclass(frozen=True)
class Problem:
    tasks: tuple[Task, ...]
    edges: tuple[Edge, ...] = ()
    anchors: tuple[Anchor, ...] = ()
    objective: Objective = "cost"
    egress: EgressFn | None = None  # None: moving data is free and instant
    # True when egress(a, b, gb) depends only on a's and b's (cloud, region) and on whether
    # they are the same place (the catalog's EgressTable): pruning then compares the places of
    # one region only with that region's places, the others being priced alike from either.
    egress_by_region: bool = False

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        n = len(self.tasks)
        for task in self.tasks:
            if not task.candidates:
                raise ValueError(f"task {task.name!r} has no candidates")
        seen = set()
        for edge in self.edges:
            if not (0 <= edge.src < n and 0 <= edge.dst < n) or edge.src == edge.dst:
                raise ValueError(f"bad edge {edge}")
            if (edge.src, edge.dst) in seen:
                raise ValueError(f"duplicate edge {edge.src}->{edge.dst}")
            seen.add((edge.src, edge.dst))
            if edge.gigabytes < 0:
                raise ValueError(f"negative data size on edge {edge}")
        for anchor in self.anchors:
            if not 0 <= anchor.task < n or anchor.gigabytes < 0:
                raise ValueError(f"bad anchor {anchor}")
        if len(topological_order(n, self.edges)) != n:
            raise ValueError("the task graph has a cycle")

    @property
    def secondary(self) -> Objective:
        return "time" if self.objective == "cost" else "cost"

    def order(self) -> list[int]:
        return topological_order(len(self.tasks), self.edges)


def topological_order(n: int, edges: tuple[Edge, ...] | list[Edge]) -> list[int]:
    """Kahn's algorithm, lowest index first among ready tasks (same rule as `Dag`)."""
    children: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for edge in edges:
        children[edge.src].append(edge.dst)
        indegree[edge.dst] += 1
    ready = [v for v in range(n) if indegree[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        u = heapq.heappop(ready)
        order.append(u)
        for v in sorted(children[u]):
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, v)
    return order


# --- the answer --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Flow:
    """Data moved for one edge (`src_task` set) or one anchor (`src_task` None)."""

    src_task: int | None
    dst_task: int
    source: Location
    destination: Location
    gigabytes: float
    cost: float
    seconds: float
    label: str = ""


@dataclass(frozen=True, slots=True)
class TaskResult:
    """One task's part of a solution.

    `considered` (filled by `optimize`): the feasible candidates of the chosen resource group,
    the best per (cloud, accelerator, spot), best first, the chosen one among them.
    `duration` = inbound transfer hours + `candidate.hours`.
    """

    index: int
    name: str
    choice: int  # index into the task's candidates
    candidate: Candidate
    start: float
    finish: float
    duration: float
    considered: tuple[Candidate, ...] = ()

    @property
    def hours(self) -> float:
        return self.candidate.hours


@dataclass(frozen=True)
class Solution:
    """The chosen candidate per task and what it adds up to.

    `value` is the objective (USD for cost, hours for time); `cost` = `compute_cost` +
    `egress_cost`; `makespan` in hours. `method` says which solver decided (`trivial`, `dp`,
    `enumerate`, `ilp`, or several joined by `+` when components differed).
    """

    objective: Objective
    tasks: tuple[TaskResult, ...]
    value: float
    cost: float
    compute_cost: float
    egress_cost: float
    makespan: float
    flows: tuple[Flow, ...] = ()
    method: str = ""
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def choice(self) -> tuple[int, ...]:
        return tuple(t.choice for t in self.tasks)

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        return tuple(t.candidate for t in self.tasks)
