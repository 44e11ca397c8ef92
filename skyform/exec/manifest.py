"""The workdir's contents as a sync sends them, for "has the code changed since the job ran?".

The files are the ones `walk` picks (the same `.skyignore` / `.gitignore` rules as rsync), each
by the sha256 of its content (a symlink by its target). `.git/` is synced but not compared: a
`git fetch` must not make a job run again. Files above LARGE_FILE bytes are compared by size
and modification time, so a dataset left in the workdir does not make every plan read it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from skyform.digests import sha256_hex
from skyform.exec.ignore import walk
from skyform.plan.model import WorkdirFiles

LARGE_FILE = 64 * 2**20
DIGITS = 16
NOT_COMPARED = (".git/",)


def file_digest(path: Path) -> str:
    st = path.stat()
    h = hashlib.sha256()
    if st.st_size > LARGE_FILE:
        h.update(f"size={st.st_size} mtime_ns={st.st_mtime_ns}".encode())
    else:
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:DIGITS]


def workdir_files(root: Path) -> WorkdirFiles | None:
    """What a sync of `root` sends now; None when it is not a readable directory."""
    if not root.is_dir():
        return None
    try:
        _, files, links = walk(root)
        found = {rel: file_digest(root / rel) for rel in files if not rel.startswith(NOT_COMPARED)}
        for rel in links:
            if not rel.startswith(NOT_COMPARED):
                target = os.readlink(root / rel)
                found[rel] = "link:" + sha256_hex(target)[:DIGITS]
    except OSError:
        return None
    return WorkdirFiles(files=dict(sorted(found.items())))
