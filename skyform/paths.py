"""Where skyform keeps its files. Importable without pydantic: `status` on an empty state
and the catalog need these paths before (or instead of) any model."""

from __future__ import annotations

import os
import tempfile
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


def write_atomic(path: Path, data: bytes | str, mode: int = 0o644) -> None:
    """Write via a temp file in the same directory, fsync, then rename over `path`: a reader
    sees the old file or the new one, never half of one; a failed write changes nothing."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def state_path() -> Path:
    """The state database (skyform.state.db opens it)."""
    return home() / "state.db"
