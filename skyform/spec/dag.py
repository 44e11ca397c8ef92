"""Pipelines: the tasks of a file and the edges between them.

A multi-document file whose first document is exactly {name} or {name, execution} has a
header. `execution: serial` (default) chains the tasks in file order; `parallel` has no
edges. skyform's `skyform.depends_on` (task names) gives a general DAG instead.
"""

from __future__ import annotations

import heapq

from skyform.frozen import Frozen
from skyform.spec.errors import Where, did_you_mean
from skyform.spec.models import Execution, TaskSpec

MAX_TASKS = 1000


class Dag(Frozen):
    name: str | None = None
    execution: Execution = "serial"
    primary_tasks: list[str] = []  # job group: the tasks whose end ends the group
    termination_delay: float = 0.0  # seconds the other tasks get after the primaries end
    tasks: list[TaskSpec]
    edges: list[tuple[int, int]] = []
    warnings: tuple[str, ...] = ()  # notes from loading (ignored keys ...); not in the digest
    overrides: dict[str, str] = {}  # command-line resource flags, as ResourceOverrides records
    # the directory relative paths were made absolute from (None: the task has none)
    relative_to: str | None = None

    def parents(self, index: int) -> list[int]:
        return sorted(u for u, v in self.edges if v == index)

    def children(self, index: int) -> list[int]:
        return sorted(v for u, v in self.edges if u == index)

    def topological_order(self) -> list[int]:
        """Kahn's algorithm; ties go to the lower index, so the order is deterministic."""
        indegree = [0] * len(self.tasks)
        for _, v in self.edges:
            indegree[v] += 1
        ready = [i for i, d in enumerate(indegree) if d == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            u = heapq.heappop(ready)
            order.append(u)
            for v in self.children(u):
                indegree[v] -= 1
                if indegree[v] == 0:
                    heapq.heappush(ready, v)
        return order

    def is_chain(self) -> bool:
        """True for one task, or tasks linked one after another (the DP-friendly shape)."""
        n = len(self.tasks)
        if n == 1:
            return True
        if len(self.edges) != n - 1:
            return False
        order = self.topological_order()
        return set(self.edges) == {(order[i], order[i + 1]) for i in range(n - 1)}


def build_edges(
    tasks: list[TaskSpec], execution: Execution, wheres: list[Where], header: Where | None
) -> list[tuple[int, int]]:
    declared = any(t.skyform.depends_on for t in tasks)
    if not declared:
        if execution == "parallel":
            return []
        return [(i, i + 1) for i in range(len(tasks) - 1)]
    if execution == "parallel" and header is not None:
        header.fail(
            ("execution",),
            "execution: parallel cannot be combined with skyform.depends_on",
            "Remove 'execution: parallel'; depends_on already says what runs side by side.",
        )
    index: dict[str, int] = {}
    for i, task in enumerate(tasks):
        if task.name is None:
            continue
        if task.name in index:
            wheres[i].fail(
                ("name",),
                f"task name '{task.name}' is used twice (first as task #{index[task.name] + 1})",
                "Names must be unique when tasks refer to each other with depends_on.",
            )
        index[task.name] = i
    edges = set()
    for i, task in enumerate(tasks):
        for j, parent in enumerate(task.skyform.depends_on):
            path = ("skyform", "depends_on", j)
            if parent not in index:
                guess = did_you_mean(parent, index)
                hint = f"Did you mean '{guess}'? " if guess else ""
                wheres[i].fail(
                    path,
                    f"depends_on names an unknown task '{parent}'",
                    f"{hint}Tasks in this file: {', '.join(index) or '(none named)'}.",
                )
            if index[parent] == i:
                wheres[i].fail(path, f"task '{parent}' depends on itself")
            edges.add((index[parent], i))
    ordered = sorted(edges)
    cycle = _find_cycle(len(tasks), ordered)
    if cycle:
        names = " -> ".join(tasks[i].label(i) for i in [*cycle, cycle[0]])
        wheres[cycle[0]].fail(
            ("skyform", "depends_on"),
            f"depends_on forms a cycle: {names}",
            "A pipeline must be acyclic; remove one of these dependencies.",
        )
    return ordered


def _find_cycle(n: int, edges: list[tuple[int, int]]) -> list[int] | None:
    """One cycle as a list of task indices, or None (iterative DFS: no recursion limit)."""
    children: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        children[u].append(v)
    state = [0] * n  # 0 new, 1 on the current path, 2 done
    for start in range(n):
        if state[start]:
            continue
        path = [start]
        cursor = [0]
        state[start] = 1
        while path:
            u = path[-1]
            if cursor[-1] < len(children[u]):
                v = children[u][cursor[-1]]
                cursor[-1] += 1
                if state[v] == 1:
                    return path[path.index(v) :]
                if state[v] == 0:
                    state[v] = 1
                    path.append(v)
                    cursor.append(0)
            else:
                state[u] = 2
                path.pop()
                cursor.pop()
    return None
