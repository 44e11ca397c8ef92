"""Where skyform keeps its files. Importable without pydantic: `status` on an empty state
and the catalog need these paths before (or instead of) any model."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def atomic_path(path: Path, mode: int = 0o644, *, exclusive: bool = False) -> Iterator[Path]:
    """A temp file beside `path` to fill (a database, a download); when the block ends
    without error it gets `mode` and takes `path`'s place in one rename, else it is removed.
    `exclusive`: never overwrite — it is linked into place, and FileExistsError says
    `path` was there first."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, mode)
        if exclusive:
            os.link(tmp, path)  # atomic, and fails if the file exists: first writer wins
        else:
            os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_atomic(
    path: Path, data: bytes | str, mode: int = 0o644, *, exclusive: bool = False
) -> bool:
    """Write via a temp file in the same directory, fsync, then rename over `path`: a reader
    sees the old file or the new one, never half of one; a failed write changes nothing.
    `mode` 0o600 for anything private (keys, state, secrets). With `exclusive`, an existing
    `path` is left alone and the result is False."""
    raw = data.encode() if isinstance(data, str) else data
    try:
        with atomic_path(path, mode, exclusive=exclusive) as tmp, open(tmp, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
    except FileExistsError:
        if not exclusive:
            raise
        return False
    return True


def state_path() -> Path:
    """The state database (skyform.state.db opens it)."""
    return home() / "state.db"
