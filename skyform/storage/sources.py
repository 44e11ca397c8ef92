"""The local sources uploaded into a bucket: where they are, which files an upload sends, and
their digest (what `plan` compares with the last upload, and `apply` with the plan)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from skyform.digests import sha256


def local_source(source: str, task_dir: Path) -> Path:
    """A source as the task file writes it (`./data`, `~/data`, `$HOME/data`), resolved."""
    local = Path(os.path.expandvars(source)).expanduser()
    return local if local.is_absolute() else task_dir / local


def upload_files(root: Path) -> list[str]:
    """The files under `root` an upload sends: sync's ignore rules, minus `.git`, no links."""
    from skyform.exec.ignore import walk

    _, files, _ = walk(root)
    return [f for f in files if f != ".git" and not f.startswith(".git/")]


def source_digest(source: str, task_dir: Path) -> str | None:
    """Of the files an upload of `source` sends, by path and content (files above 64 MiB by
    size and mtime, as the workdir's); None when the source is not there."""
    from skyform.exec.manifest import file_digest

    local = local_source(source, task_dir)
    try:
        if local.is_dir():
            entries = [(rel, file_digest(local / rel)) for rel in sorted(upload_files(local))]
        elif local.is_file():
            entries = [(local.name, file_digest(local))]
        else:
            return None
    except OSError:
        return None
    return sha256(json.dumps(entries))


def source_digests(sources: Iterable[str], task_dir: Path) -> dict[str, str]:
    """{source: digest} for the sources that are there."""
    found = {s: source_digest(s, task_dir) for s in sorted(set(sources))}
    return {s: d for s, d in found.items() if d is not None}
