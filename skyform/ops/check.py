"""What `skyform check` looks at: which infra this machine can use right now.

One row set per infra in the table (skyform/infra.py), made by that infra's engine
(stacks/registry.py): local facts are read (environment, credential files, kubeconfig,
PATH); ssh pool hosts are logged in to, as apply will, and the ones whose size config.yaml
leaves out are probed; the one API call is Kubernetes' node list for the contexts skyform
plans on, which is what `plan` needs from a cluster (and refreshes its capacity cache).
"""

from __future__ import annotations

import os
from pathlib import Path

from skyform.config import Config, load_config
from skyform.stacks.health import InfraStatus
from skyform.stacks.registry import check_rows


def check_all(config: Config | None = None, env: dict[str, str] | None = None) -> list[InfraStatus]:
    config = config or load_config()
    env = dict(os.environ if env is None else env)
    return check_rows(config, env, Path(env.get("HOME") or Path.home()))
