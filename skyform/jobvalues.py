"""What a job on a node may be given, whoever wrote it: environment variable names and
file-mount destinations.

The task loader (spec/) applies these rules to a task file; the plan loader
(plan/plancheck.py) applies them again to a plan read from a file, which may have been
edited — a rule broken there would otherwise show only once the cluster was provisioned
(billed, and left in INIT). A leaf, standard library only: `show` reads plans without
loading the task-file modules.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MOUNT_HINT = "Use a plain path on the node, e.g. /data or ~/data."


def is_env_name(name: str) -> bool:
    """A name a shell and `env` take: letters, digits and '_', not starting with a digit."""
    return ENV_NAME.fullmatch(name) is not None


def mount_destination_problem(dst: str) -> tuple[str, str | None] | None:
    """(what is wrong, what to write instead) for a file-mount destination no job may be
    given: not a path, a trailing '/', a NUL or a line break, '..', `~user`; None if fine."""
    if not dst or "://" in dst:
        return f"file mount destination '{dst}' must be a path on the node", None
    if "\x00" in dst or "\n" in dst or "\r" in dst:
        return "file mount destination contains a NUL byte or a line break", MOUNT_HINT
    if dst.endswith("/") and dst != "/":
        return f"file mount destination '{dst}' ends with '/'", f"Write '{dst.rstrip('/')}'."
    if ".." in PurePosixPath(dst.removeprefix("~/")).parts:
        return (
            f"file mount destination {dst!r} contains '..'",
            "Write the path on the node without '..', e.g. /data or ~/data.",
        )
    if dst.startswith("~") and not (dst == "~" or dst.startswith("~/")):
        return (
            f"file mount destination {dst!r}: '~user' paths are not supported",
            "Use ~/PATH (the node user's home) or an absolute path.",
        )
    return None
