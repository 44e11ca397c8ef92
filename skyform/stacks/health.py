"""What an engine reports about the infra it runs on: `skyform check`'s rows.

Each engine (local, ssh pools, every cloud folder under pulumi/) makes its own rows; the
check use case walks the infra table and asks each for them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass, field

from skyform.infra import BY_NAME


@dataclass(frozen=True)
class InfraStatus:
    name: str
    usable: bool
    detail: str
    hint: str | None = None
    items: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def sdk_installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def missing_sdk_hint(cloud: str) -> str | None:
    """How to install the cloud's provider SDK, or None when it is there (or needs none)."""
    row = BY_NAME[cloud]
    if row.sdk_module is None or sdk_installed(row.sdk_module):
        return None
    return f"the Pulumi provider SDK is not installed: pip install 'skyform[{row.pip_extra}]'"
