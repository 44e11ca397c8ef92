"""Objectives, schedule and tie-breaking on small hand-made problems."""

from __future__ import annotations

import pytest

from skyform.plan.catalog.egress import Transfer
from skyform.plan.catalog.offer import Location, Offer
from skyform.plan.optimizer import Anchor, Candidate, Edge, Problem, Task, solve

EAST_1 = Location("c", "east", "east-1")
EAST_2 = Location("c", "east", "east-2")
WEST = Location("c", "west", "west-1")


def cand(where: Location, price: float, hours: float = 1.0, itype: str = "m", nodes: int = 1):
    offer = Offer(where.cloud, where.region or "", where.zone, itype, False, price)
    return Candidate(offer, nodes, hours)


def egress(a: Location, b: Location, gb: float) -> Transfer:
    """$1/GB between regions, $0.5/GB between zones; 10 Gbps."""
    if a == b:
        return Transfer(0.0, 0.0)
    rate = 0.5 if a.region == b.region else 1.0
    return Transfer(rate * gb, gb * 8 / 10)


def test_schedule_adds_transfer_time_between_places():
    problem = Problem(
        tasks=(Task("a", (cand(EAST_1, 1.0, 2.0),)), Task("b", (cand(WEST, 1.0, 3.0),))),
        edges=(Edge(0, 1, 450.0),),  # 450 GB · 8 / 10 Gbps = 360 s = 0.1 h
        egress=egress,
    )
    solution = solve(problem)
    a, b = solution.tasks
    assert (a.start, a.finish) == (0.0, 2.0)
    assert b.start == pytest.approx(2.1)
    assert b.finish == pytest.approx(5.1)
    assert solution.makespan == pytest.approx(5.1)
    (flow,) = solution.flows
    assert (flow.src_task, flow.dst_task, flow.source, flow.destination) == (0, 1, EAST_1, WEST)
    assert (flow.cost, flow.seconds) == (pytest.approx(450.0), pytest.approx(360.0))
    assert solution.compute_cost == pytest.approx(5.0)
    assert solution.cost == pytest.approx(455.0)


def test_cost_ties_go_to_the_faster_candidate():
    slow, fast = cand(EAST_1, 2.0, 3.0, "slow"), cand(WEST, 3.0, 2.0, "fast")  # both $6
    solution = solve(Problem((Task("t", (slow, fast)),)))
    assert solution.tasks[0].candidate.offer.instance_type == "fast"


def test_time_ties_go_to_the_cheaper_candidate():
    dear, cheap = cand(EAST_1, 5.0, 2.0, "dear"), cand(WEST, 1.0, 2.0, "cheap")
    solution = solve(Problem((Task("t", (dear, cheap)),), objective="time"))
    assert solution.tasks[0].candidate.offer.instance_type == "cheap"


def test_time_objective_lets_a_short_parallel_task_take_its_time_cheaply():
    long_task = Task("long", (cand(EAST_1, 1.0, 10.0),))
    short = Task("short", (cand(EAST_1, 10.0, 1.0, "rush"), cand(WEST, 1.0, 5.0, "calm")))
    solution = solve(Problem((long_task, short), objective="time"))
    assert solution.makespan == 10.0
    assert solution.tasks[1].candidate.offer.instance_type == "calm"


def test_cost_objective_finishes_an_independent_part_no_later_than_needed():
    # Two equally cheap ways for `b`; the makespan is set by `a`, so `b` takes rank order
    # (the faster one first), and the overall makespan is what `a` needs.
    a = Task("a", (cand(EAST_1, 1.0, 4.0),))
    b = Task("b", (cand(EAST_1, 2.0, 2.0, "x"), cand(WEST, 4.0, 1.0, "y")))
    solution = solve(Problem((a, b)))
    assert solution.tasks[1].candidate.offer.instance_type == "y"
    assert (solution.cost, solution.makespan) == (pytest.approx(8.0), 4.0)


def test_data_pulls_the_child_next_to_its_parent():
    problem = Problem(
        tasks=(
            Task("a", (cand(EAST_1, 1.0),)),
            Task("b", (cand(WEST, 1.0, itype="far"), cand(EAST_2, 1.2, itype="near"))),
        ),
        edges=(Edge(0, 1, 1.0),),
        egress=egress,
    )
    assert solve(problem).tasks[1].candidate.offer.instance_type == "near"  # 1.2+0.5 < 1+1


def test_inputs_anchored_somewhere_count_in_cost_and_duration():
    problem = Problem(
        tasks=(Task("t", (cand(EAST_1, 1.0, itype="here"), cand(WEST, 0.5, itype="there"))),),
        anchors=(Anchor(0, EAST_1, 10.0, "s3://b"),),
        egress=egress,
    )
    solution = solve(problem)
    assert solution.tasks[0].candidate.offer.instance_type == "here"  # 1 < 0.5 + 10
    anchored = solve(
        Problem(problem.tasks, anchors=problem.anchors, objective="time", egress=egress)
    )
    assert anchored.tasks[0].candidate.offer.instance_type == "here"  # no transfer time
    assert anchored.tasks[0].duration == 1.0


@pytest.mark.parametrize("method", ["dp", "ilp", "enumerate"])
@pytest.mark.parametrize("reverse", [False, True])
def test_equal_zones_resolve_to_the_first_zone_for_the_whole_chain(method, reverse):
    """Two zones at the same price: every task lands in east-1, whatever the input order and
    solver — moving one task alone would cost egress, so this needs the exact order."""
    options = (cand(EAST_1, 1.0), cand(EAST_2, 1.0))
    if reverse:
        options = options[::-1]
    tasks = tuple(Task(f"t{i}", options) for i in range(3))
    edges = (Edge(0, 1, 5.0), Edge(1, 2, 5.0))
    solution = solve(Problem(tasks, edges, egress=egress), method=method)
    assert [t.candidate.location for t in solution.tasks] == [EAST_1] * 3
    assert solution.egress_cost == 0.0


def test_a_diamond_with_ties_lands_in_the_first_zone_with_the_ilp():
    options = (cand(EAST_2, 1.0), cand(EAST_1, 1.0), cand(WEST, 1.0))
    tasks = tuple(Task(f"t{i}", options) for i in range(4))
    edges = (Edge(0, 1, 1.0), Edge(0, 2, 1.0), Edge(1, 3, 1.0), Edge(2, 3, 1.0))
    for method in ("ilp", "enumerate"):
        solution = solve(Problem(tasks, edges, egress=egress), method=method)
        assert {t.candidate.location for t in solution.tasks} == {EAST_1}, method


def test_totals_add_up():
    problem = Problem(
        tasks=(Task("a", (cand(EAST_1, 2.0, 2.0, nodes=2),)), Task("b", (cand(WEST, 1.0),))),
        edges=(Edge(0, 1, 3.0),),
        egress=egress,
    )
    solution = solve(problem)
    assert solution.compute_cost == pytest.approx(2.0 * 2 * 2 + 1.0)
    assert solution.egress_cost == pytest.approx(3.0)
    assert solution.cost == pytest.approx(solution.compute_cost + solution.egress_cost)
    assert solution.value == solution.cost
    assert solve(Problem(problem.tasks, problem.edges, objective="time", egress=egress)).value == (
        pytest.approx(3.0 + 2.4 / 3600)
    )
