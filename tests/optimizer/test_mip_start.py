"""CBC starts each integer solve from the assignment already known (a MIP start, as PuLP's
warmStart passes it): the search is cut by that assignment's value from its first node, which
halves the time-objective solves of a 20-task DAG; the optimum it proves is the same."""

from __future__ import annotations

import pytest
from optimizer_helpers import random_problem

from skyform.plan.optimizer import brute_force, solve
from skyform.plan.optimizer.ilp import PlacementIlp
from skyform.plan.optimizer.lp import EQ, GE, LE, Model, Var


def _knapsack() -> tuple[Model, list[Var]]:
    """max 5a + 4b + 3c  s.t. 2a + 3b + c <= 4, binaries: the LP optimum is fractional; the
    integer optimum is a = c = 1 (value 8)."""
    model = Model()
    a, b, c = (Var(name, 0, 1, integer=True) for name in "abc")
    model.add("weight", {a: 2, b: 3, c: 1}, LE, -4)
    model.objective = {a: -5, b: -4, c: -3}
    return model, [a, b, c]


@pytest.mark.parametrize(
    "start",
    [None, (0, 0, 0), (0, 1, 1), (1, 1, 1)],
    ids=["no start", "feasible, worst", "feasible, not optimal", "infeasible"],
)
def test_cbc_proves_the_same_optimum_from_any_start(start):
    model, columns = _knapsack()
    model.solve(mip=True, start=None if start is None else dict(zip(columns, start, strict=True)))
    assert [x.value for x in columns] == [1, 0, 1]
    assert model.objective_value() == -8


def test_a_start_of_the_integer_columns_only_is_completed_and_then_beaten():
    # pick = 1 forces slack >= 3 (value 3); other = 1 costs 2 with slack 0: the optimum
    model = Model()
    pick, other = Var("pick", 0, 1, integer=True), Var("other", 0, 1, integer=True)
    slack = Var("slack", 0, 10)
    model.add("one", {pick: 1, other: 1}, EQ, -1)
    model.add("floor", {slack: 1, pick: -3}, GE, 0)
    model.objective = {slack: 1, other: 2}
    model.solve(mip=True, start={pick: 1.0, other: 0.0})
    assert (pick.value, other.value, slack.value) == (0, 1, 0)
    assert model.objective_value() == 2


def test_starts_change_no_answer_of_the_time_objective(monkeypatch):
    started = 0
    original = PlacementIlp._start

    def counted(self, base):
        nonlocal started
        started += 1
        return original(self, base)

    problems = [
        random_problem(seed, objective="time", hierarchical=True, max_tasks=6, max_candidates=6)
        for seed in range(48)
    ]
    monkeypatch.setattr(PlacementIlp, "_start", counted)
    with_start = [solve(problem, method="ilp") for problem in problems]
    assert started >= 5  # these cases do reach CBC's branch and bound
    monkeypatch.setattr(PlacementIlp, "_start", lambda self, base: None)
    without = [solve(problem, method="ilp") for problem in problems]
    for seed, (found, plain) in enumerate(zip(with_start, without, strict=True)):
        assert (found.choice, found.cost, found.makespan) == (
            plain.choice,
            plain.cost,
            plain.makespan,
        ), seed
        assert found.choice == brute_force(problems[seed]).choice, seed


def test_the_start_file_is_the_one_pulps_warm_start_writes(tmp_path):
    pulp = pytest.importorskip("pulp")
    from skyform.plan.optimizer.lp import _mip_start

    model, columns = _knapsack()
    start = dict(zip(columns, (1.0, 0.0, 1.0), strict=True))
    ours = _mip_start(model.columns(), start)
    # PuLP's side: the same columns, renamed X0000000… as writeMPS(rename=1) names them
    problem, variables = pulp.LpProblem("m"), []
    for x in model.columns():
        variable = problem.add_variable(x.name, 0, 1, cat="Integer")
        variable.setInitialValue(start[x])
        variables.append(variable)
    names = {v.name: f"X{n:07d}" for n, v in enumerate(variables)}
    written = tmp_path / "pulp.mst"
    pulp.COIN_CMD(msg=False).writesol(str(written), None, variables, names, {})
    assert ours == written.read_text()
