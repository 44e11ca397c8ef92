"""The engines, registered by name: the infra table's `engine` column picks one per cloud.

An engine is two modules. Its engine module defines `make(cloud, *, config, state,
plan_digest) -> StackEngine`; it is imported only when a cluster is provisioned, read or
torn down. Its health module is light (no SDK, no engine): `nodes_gone(handle)` (has the
infra dropped the cluster's nodes behind skyform's back?), `check(row, config, env,
user_home)` (`skyform check`'s rows for one infra) and `tool_check()` (the engine's own
tool, or None). Both are found here by name, so this module imports no engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyform.errors import InfraUnusable
from skyform.infra import BY_NAME, TABLE, InfraKind

if TYPE_CHECKING:
    from skyform.config import Config
    from skyform.stacks.engine import StackEngine
    from skyform.stacks.health import InfraStatus
    from skyform.state.db import StateDB
    from skyform.state.models import ClusterHandle


@dataclass(frozen=True)
class EngineModules:
    engine: str  # defines make(...)
    health: str  # defines nodes_gone(handle), check(...), tool_check()


ENGINES: dict[str, EngineModules] = {
    "local": EngineModules("skyform.stacks.local", "skyform.stacks.local"),
    "ssh": EngineModules("skyform.stacks.sshpool", "skyform.stacks.sshcheck"),
    "pulumi": EngineModules("skyform.stacks.pulumi.engine", "skyform.stacks.pulumi.health"),
}


def _row(cloud: str) -> InfraKind:
    row = BY_NAME.get(cloud)
    if row is None or row.engine not in ENGINES:
        raise InfraUnusable(f"skyform has no engine for infra {cloud!r}", nothing_made=True)
    return row


def _module(path: str, row: InfraKind) -> Any:
    try:
        return importlib.import_module(path)
    except ImportError:
        extra = row.pip_extra or "all"
        raise InfraUnusable(
            f"no engine for {row.name} in this build of skyform",
            f"Install the extra: pip install 'skyform[{extra}]'",
            nothing_made=True,
        ) from None


def engine_for(
    cloud: str, *, config: Config, state: StateDB, plan_digest: str | None = None
) -> StackEngine:
    """The engine for an offer's cloud, imported only now. `plan_digest` tags cloud
    resources with the plan that made them."""
    row = _row(cloud)
    module = _module(ENGINES[row.engine].engine, row)
    return module.make(cloud, config=config, state=state, plan_digest=plan_digest)


def nodes_gone(handle: ClusterHandle) -> bool:
    """Whether the infra says the cluster's nodes are gone (read cheaply: files, no SDK)."""
    row = BY_NAME.get(handle.offer.cloud)
    if row is None or row.engine != handle.engine or row.engine not in ENGINES:
        return False
    return bool(_module(ENGINES[row.engine].health, row).nodes_gone(handle))


def check_row(
    row: InfraKind, config: Config, env: Mapping[str, str], user_home: Path
) -> list[InfraStatus]:
    """`skyform check`'s rows of one infra."""
    return list(_module(ENGINES[row.engine].health, row).check(row, config, env, user_home))


def check_rows(config: Config, env: Mapping[str, str], user_home: Path) -> list[InfraStatus]:
    """`skyform check`: every infra's rows, on-prem first, then the engines' own tools."""
    rows = [r for r in TABLE if r.on_prem] + [r for r in TABLE if not r.on_prem]
    results = []
    for row in rows:
        results += check_row(row, config, env, user_home)
    for name in dict.fromkeys(r.engine for r in rows):
        tool = importlib.import_module(ENGINES[name].health).tool_check()
        if tool is not None:
            results.append(tool)
    return results
