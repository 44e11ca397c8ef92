"""The environment of setup and run on every node.

SKYFORM_* and the SkyPilot names with the same values, so SkyPilot task scripts run unchanged.
Values reach the node only inside a 0600 file of `export NAME='value'` lines (shlex-quoted:
quotes, `$`, backticks and newlines survive byte for byte) that the runner sources — never on
a command line, never in a log.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from skyform.errors import ExecError
from skyform.exec.templating import render
from skyform.jobvalues import is_env_name
from skyform.state.models import ClusterHandle

PREFIXES = ("SKYFORM_", "SKYPILOT_")


def cluster_info(cluster: ClusterHandle) -> dict:
    """SKYFORM_CLUSTER_INFO: what a task may want to know about where it runs."""
    offer = cluster.offer
    return {
        "cluster_name": cluster.name,
        "engine": cluster.engine,
        "infra": cluster.infra,
        "cloud": offer.cloud,
        "region": offer.region,
        "zone": offer.zone,
        "instance_type": offer.instance_type,
        "use_spot": offer.spot,
        "accelerators": offer.accelerators,
        "num_nodes": len(cluster.nodes),
    }


def gpus_per_node(cluster: ClusterHandle) -> int:
    """Whole GPUs a node has (a fractional request such as A10:0.5 still sees its one GPU)."""
    return math.ceil(cluster.offer.accelerator_count) if cluster.offer.accelerator else 0


def system_env(
    cluster: ClusterHandle,
    rank: int,
    *,
    task_id: str,
    recovery_count: int = 0,
    setup: bool = False,
    checkpoint_dir: str | None = None,
) -> dict[str, str]:
    """The SKYFORM_* / SKYPILOT_* values for node `rank` (and SKYFORM_CHECKPOINT_DIR, which
    SkyPilot does not have, when the task declares one)."""
    nodes = sorted(cluster.nodes, key=lambda n: n.rank)
    ips = "\n".join(n.ip for n in nodes)
    values = {
        "NODE_RANK": str(rank),
        "NODE_IPS": ips,
        "NUM_NODES": str(len(nodes)),
        "NUM_GPUS_PER_NODE": str(gpus_per_node(cluster)),
        "TASK_ID": task_id,
        "CLUSTER_INFO": json.dumps(cluster_info(cluster), sort_keys=True),
        "RECOVERY_COUNT": str(recovery_count),
    }
    if setup:
        values["SETUP_NODE_RANK"] = str(rank)
        values["SETUP_NODE_IPS"] = ips
    env = {prefix + name: value for prefix in PREFIXES for name, value in values.items()}
    if checkpoint_dir:
        env["SKYFORM_CHECKPOINT_DIR"] = checkpoint_dir
    return env


def job_env(
    cluster: ClusterHandle,
    rank: int,
    *,
    task_id: str,
    envs: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
    recovery_count: int = 0,
    setup: bool = False,
    checkpoint_dir: str | None = None,
) -> dict[str, str]:
    """Task envs, then secrets, then the system values (which a task cannot override)."""
    env: dict[str, str] = {}
    for source, kind in ((envs or {}, "env"), (secrets or {}, "secret")):
        for name, value in source.items():
            check_var(name, value, kind)
            env[name] = value
    env.update(
        system_env(
            cluster,
            rank,
            task_id=task_id,
            recovery_count=recovery_count,
            setup=setup,
            checkpoint_dir=checkpoint_dir,
        )
    )
    return env


def check_var(name: str, value: object, kind: str = "env") -> None:
    """Names must be shell identifiers; values any text without NUL. Never echoes the value."""
    if not is_env_name(name):
        raise ExecError(
            f"{kind} name {name!r} is not a valid environment variable name",
            hint="use letters, digits and underscores, not starting with a digit",
        )
    if not isinstance(value, str):
        raise ExecError(f"{kind} {name} has no value", hint=f"supply it with --{kind} {name}=...")
    if "\0" in value:
        raise ExecError(f"{kind} {name} contains a NUL byte, which no environment can carry")


def render_env_file(env: Mapping[str, str]) -> str:
    for name, value in env.items():
        check_var(name, value)
    return render("env.sh.j2", env=list(env.items()))
