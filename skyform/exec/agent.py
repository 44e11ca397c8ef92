"""The autostop node agent on a cluster's head node: install it, give it a setting, read it.

The agent (templates/agent.sh.j2) decides idleness on the node, so a laptop that sleeps
does not keep a cluster up, nor stop one under a running job. One command per call on an
open NodeRunner. Node files: ~/.skyform_node/agent.sh and ~/.skyform_node/autostop/.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import cache

from skyform.errors import ExecError
from skyform.exec.node_jobs import NODE_BASE, cluster_prefix, install_command, install_failed
from skyform.exec.runner import NodeRunner
from skyform.exec.templating import render
from skyform.infra import Stop, infra
from skyform.plan.model import AutostopSetting

AGENT = f"$HOME/{NODE_BASE}/agent.sh"


@cache
def agent_script() -> str:
    from skyform.storage.nodes import PARK_BUCKETS

    return render("agent.sh.j2", base=NODE_BASE, park=PARK_BUCKETS)


@dataclass(frozen=True)
class AgentReport:
    """What the head node's agent says (`agent.sh show`)."""

    armed: bool  # a setting is there
    agent_alive: bool
    last_active: float | None
    state: str | None  # "autostopping", "stop", "down" or None
    state_at: float | None
    node_now: float

    @property
    def acted(self) -> str | None:
        """ "stop" or "down" once the agent has finished its part, else None."""
        return self.state if self.state in ("stop", "down") else None


def action_for(cloud: str) -> str:
    """What the agent does once it decides: `cloud` also shuts the machine down (infra whose
    stop stops the instance); the others end the cluster's processes and leave the marker
    for `skyform status` (`local`: sessions are local shells in the node's directory)."""
    row = infra(cloud)
    if row is not None and row.stop is Stop.INSTANCES:
        return "cloud"
    return "local" if row is not None and row.engine == "local" else "ssh"


def _install(runner: NodeRunner) -> None:
    script = agent_script()
    result = runner.run(install_command(script, "agent.sh"), stdin=script)
    if not result.ok:
        raise install_failed(runner, "the autostop agent", result)


def _agent(runner: NodeRunner, *args: str | int, stdin: str | None = None) -> str:
    cmd = f'bash "{AGENT}" ' + " ".join(shlex.quote(str(a)) for a in args)
    result = runner.run(cmd, stdin=stdin)
    if not result.ok or result.stdout.startswith("error "):
        raise ExecError(
            f"{runner.label}: the autostop agent failed: "
            f"{(result.stdout + result.stderr).strip() or f'exit code {result.exit_code}'}"
        )
    return result.stdout.strip()


def arm(
    runner: NodeRunner, cluster: str, setting: AutostopSetting, *, cloud: str, interval: int
) -> str:
    """Give the head node this setting (its countdown starts now) and make sure the agent
    runs; returns the agent's line ("agent PID")."""
    _install(runner)
    minutes = [str(m) if m is not None else "-" for m in (setting.stop_after, setting.down_after)]
    return _agent(
        runner,
        "set",
        cluster_prefix(cluster),
        *minutes,
        setting.wait_for,
        setting.hook_timeout,
        interval,
        action_for(cloud),
        stdin=setting.hook or "",
    )


def disarm(runner: NodeRunner) -> None:
    """No more autostop on this node (the agent ends)."""
    _install(runner)
    _agent(runner, "cancel")


def halt(runner: NodeRunner) -> None:
    """End the agent and keep its setting (a cluster being stopped by hand)."""
    _install(runner)
    _agent(runner, "halt")


def report(runner: NodeRunner) -> AgentReport:
    _install(runner)
    lines = dict(
        line.partition(" ")[::2] for line in _agent(runner, "show").splitlines() if line.strip()
    )
    state = lines.get("state", "-").split()
    kind, at = None, None
    if state and state[0] != "-":
        kind = state[0]
        at = _number(state[1]) if len(state) > 1 else None
    return AgentReport(
        armed=lines.get("setting", "-") != "-",
        agent_alive=lines.get("agent", "-") != "-",
        last_active=_number(lines.get("last_active", "-")),
        state=kind,
        state_at=at,
        node_now=_number(lines.get("now", "-")) or 0.0,
    )


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
