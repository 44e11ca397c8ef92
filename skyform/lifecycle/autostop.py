"""Autostop on the head node: arm its agent with a cluster's setting (every job start does, and
`apply` when the setting changes) or cancel it. What the agent later did is read back by
ops/autostop.py (status); the agent itself is skyform/exec/agent.py."""

from __future__ import annotations

from skyform.config import Config
from skyform.errors import StateError
from skyform.exec import agent
from skyform.exec.connect import open_runner
from skyform.exec.runner import NodeRunner, Timeouts
from skyform.plan.model import AutostopSetting
from skyform.state.db import StateDB
from skyform.state.models import ClusterRecord

QUICK = Timeouts(connect=5.0, banner=5.0, auth=5.0, channel=5.0, command=30.0)


def arm_head(
    runner: NodeRunner, record: ClusterRecord, setting: AutostopSetting | None, config: Config
) -> str:
    """Give the head node `setting` (None: cancel it); what the node said, in words (after
    the word "autostop", which the caller's line already names)."""
    if setting is None:
        agent.disarm(runner)
        return "cancelled on the node"
    agent.arm(
        runner,
        record.name,
        setting,
        cloud=record.spec.offer.cloud,
        interval=config.autostop.check_interval,
    )
    return f"{setting.short}: the node agent checks every {config.autostop.check_interval} s"


def push_setting(
    db: StateDB, config: Config, record: ClusterRecord, setting: AutostopSetting | None
) -> ClusterRecord:
    """Send `setting` to the cluster's head node and record it as the cluster's."""
    if record.handle is None or not record.handle.nodes:
        raise StateError(f"cluster {record.name!r} has no nodes to set autostop on")
    runner = open_runner(record.handle.head, timeouts=QUICK)
    try:
        message = arm_head(runner, record, setting, config)
    finally:
        runner.close()
    spec = record.spec.model_copy(update={"autostop": setting})
    record = record.model_copy(update={"spec": spec})
    db.put_cluster(record)
    db.add_event("cluster.autostop", f"autostop {message}", cluster=record.name)
    return record
