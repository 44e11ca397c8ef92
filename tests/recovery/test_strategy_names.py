"""The recovery strategy names live in one place (skyform/spec/recovery.py): the task file's
`job_recovery`, `jobs launch --recovery` and the policy accept the same ones."""

from __future__ import annotations

import pytest

from skyform.cli.commands.jobs import Recovery
from skyform.spec.errors import BadValue
from skyform.spec.recovery import FLAG_NAMES, NAMES, Strategy
from skyform.spec.values import recovery_strategy


def test_the_flag_offers_exactly_the_strategies_the_policy_knows():
    assert sorted(r.value for r in Recovery) == list(FLAG_NAMES)
    assert {Strategy.parse(r.value) for r in Recovery} == set(Strategy)


@pytest.mark.parametrize("name", NAMES)
def test_the_task_file_takes_every_strategy_in_any_case(name):
    assert recovery_strategy(name.lower()) == name
    assert Strategy.parse(name) is Strategy(name)


def test_an_unknown_strategy_names_the_known_ones():
    with pytest.raises(BadValue) as err:
        recovery_strategy("FAILOVR")
    assert err.value.hint == "Did you mean 'FAILOVER'? Choose one of: EAGER_NEXT_REGION, FAILOVER."
