"""The README's "Running skyform's Kubernetes path for real" commands, pasted as a user
pastes them, on the session's test cluster through the real engine (the steps and their
outcomes: tests/e2e/docs_commands.py KUBERNETES)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "e2e"))

from docs_commands import ENGINE_SCENARIOS, run_step
from kubecluster.skyuser import nothing_of

pytestmark = pytest.mark.engine


def test_the_readmes_kubernetes_commands_run_on_the_test_cluster(kube_user):
    env = dict(kube_user.env)
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # `skyform` as installed
    for step in ENGINE_SCENARIOS["kubernetes"]:
        for line in step.lines:
            run_step(step, line, kube_user.cwd, env)
    assert nothing_of(kube_user, "demo")
