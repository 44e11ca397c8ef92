"""What `skyform check` looks at: which infra this machine can use right now.

One row set per infra in the table (skyform/infra.py), made by that infra's engine
(stacks/registry.py): local facts are read (environment, credential files, kubeconfig,
PATH); ssh pool hosts are logged in to, as apply will, and the ones whose size config.yaml
leaves out are probed; the one API call is Kubernetes' node list for the contexts skyform
plans on, which is what `plan` needs from a cluster (and refreshes its capacity cache).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skyform.config import Config, load_config
from skyform.infra import BY_NAME
from skyform.stacks.health import InfraStatus
from skyform.stacks.registry import check_row, check_rows

if TYPE_CHECKING:
    from skyform.plan.cluster_model import BlockedPlacement
    from skyform.spec.dag import Dag


def check_all(config: Config | None = None, env: dict[str, str] | None = None) -> list[InfraStatus]:
    config = config or load_config()
    env = dict(os.environ if env is None else env)
    return check_rows(config, env, Path(env.get("HOME") or Path.home()))


def unusable_here(
    dag: Dag, config: Config, env: Mapping[str, str] | None = None
) -> list[BlockedPlacement]:
    """The priced clouds the tasks could be placed on that `skyform check` finds unusable on
    this machine (no credentials, no SDK), as placements a launch must not choose, each
    with `check`'s reason. What `launch` places on is what it can make: a plan of nodes this
    machine cannot create only fails later (SkyPilot plans on the clouds `sky check` enabled).
    Unpriced infra (local, ssh pools, Kubernetes contexts) has offers only where it answers."""
    from skyform.plan.cluster_model import BlockedPlacement

    env = dict(os.environ if env is None else env)
    named = [r.cloud for t in dag.tasks for r in t.resources.alternatives()]
    scope = {c for c in named if c} | (set(config.plan.clouds) if None in named else set())
    blocks = []
    for cloud in sorted(c for c in scope if c in BY_NAME and BY_NAME[c].priced):
        home = Path(env.get("HOME") or Path.home())
        for row in check_row(BY_NAME[cloud], config, env, home):
            if not row.usable:
                reason = f"not usable here: {row.detail}; see `skyform check`"
                blocks.append(BlockedPlacement(cloud=cloud, reason=reason))
    return blocks
