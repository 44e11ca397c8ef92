"""Where skyform keeps its files. Importable without pydantic: `status` on an empty state
and the catalog need these paths before (or instead of) any model."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = "~/.skyform"


def home() -> Path:
    """SKYFORM_HOME as an absolute path (not created)."""
    return Path(os.environ.get("SKYFORM_HOME") or DEFAULT_HOME).expanduser().resolve()


def ensure_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700 and tighten it if it already exists."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def ensure_home() -> Path:
    return ensure_dir(home())


def state_path() -> Path:
    """The state database (skyform.state.db opens it)."""
    return home() / "state.db"
