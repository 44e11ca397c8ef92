"""What a task needs from this machine, checked when the file is read (validate, plan).

A missing workdir or file_mounts source, a destination that climbs out with `..`, or an env
value the OS cannot carry (NUL) would otherwise pass planning and fail only after the
cluster was provisioned — billed, and left in INIT. Bucket URIs (`s3://...`) are not local
paths and are left to the storage code.

Relative paths start at the current directory, as in SkyPilot (`sky launch` resolves a
relative `workdir` and file mount source with os.path.abspath from where it runs), and are
made absolute here, so the plan records the paths it will sync. A relative path missing
from the current directory but present beside the task file is named in the error: that is
where skyform before 0.9 looked. `~` is this user's home and is kept as written.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from skyform.jobvalues import mount_destination_problem
from skyform.spec.errors import Where
from skyform.spec.yamlpos import Path as FieldPath

RELATIVE_NOTE = "relative paths start at the current directory, as in SkyPilot"


def task_dir_of(label: str) -> Path:
    """The task file's folder (the current directory for text with no file)."""
    return Path.cwd() if label == "<task>" else Path(label).resolve().parent


def base_of(where: Where) -> Path:
    """Where the document's relative paths start: the pinned base, else the current directory."""
    return where.base if where.base is not None else Path.cwd()


def local_path(text: str, task_dir: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else task_dir / path


def absolute(text: str, where: Where) -> str:
    """`text` as the plan records it: a relative path made absolute from the base (as
    os.path.abspath does: `..` folded, links kept); `~` and absolute paths as written."""
    stripped = text.strip()
    if stripped.startswith("~") or Path(stripped).is_absolute():
        return text
    where.resolved.append(stripped)
    return os.path.abspath(os.path.join(base_of(where), stripped))


def check_workdir(workdir: str, raw: object, where: Where) -> None:
    """A local workdir must be an existing directory (a git workdir is not checked here)."""
    path = local_path(workdir, base_of(where))
    shown = _shown(raw, workdir)
    if not path.exists():
        where.fail(
            ("workdir",),
            f"workdir {shown} does not exist{_looked_at(workdir, where)}",
            missing_hint(workdir, where)
            or "Create the directory, or point `workdir:` at the folder to sync to the nodes.",
        )
    if not path.is_dir():
        where.fail(
            ("workdir",),
            f"workdir {shown} is not a directory",
            "`workdir:` is a folder synced to every node; mount single files with "
            "`file_mounts:` instead.",
        )


def check_mount_destination(dst: str, path: FieldPath, where: Where) -> None:
    """The rules of skyform/jobvalues.py (the plan loader applies them too)."""
    problem = mount_destination_problem(dst)
    if problem is not None:
        where.fail(path, *problem, at_key=True)


def check_mount_source(source: str, raw: object, path: FieldPath, where: Where) -> None:
    """A local source (not a bucket URI) must exist when the task is read."""
    if "://" in source:
        return
    if not local_path(source.strip(), base_of(where)).exists():
        where.fail(
            path,
            f"file mount source {_shown(raw, source)} does not exist"
            f"{_looked_at(source.strip(), where)}",
            missing_hint(source.strip(), where)
            or "Create it, fix the path, or use a bucket URI (s3://..., gs://...).",
        )


def check_local_file(text: str, what: str, path: FieldPath, where: Where) -> None:
    """A local file the task names (a service's TLS key or certificate) must be one when the
    task is read: a missing one is this error, not a controller that fails to start."""
    if not local_path(text.strip(), base_of(where)).is_file():
        where.fail(
            path,
            f"{what} {text!r} is not a file{_looked_at(text.strip(), where)}",
            missing_hint(text.strip(), where) or "Create it or fix the path.",
        )


def check_env_value(name: str, value: str, path: FieldPath, where: Where) -> None:
    """The OS ends environment strings at NUL, so such a value cannot reach a job intact.
    (The value is never echoed: it may be a secret.)"""
    if "\x00" in value:
        kind = "secret" if path[:1] == ("secrets",) else "environment variable"
        where.fail(
            path,
            f"the value of {kind} {name} contains a NUL byte",
            "Environment values cannot hold NUL bytes; remove it (or base64-encode binary data).",
        )


def _looked_at(text: str, where: Where) -> str:
    """Where the path was looked for, when that is not plain from the path itself."""
    if text.startswith("~"):
        return f" (looked for {Path(text).expanduser()})"
    if Path(text).is_absolute():
        return ""
    return f" ({RELATIVE_NOTE}: {base_of(where)})"


def missing_hint(text: str, where: Where) -> str | None:
    """The hint for a relative path missing here that exists beside the task file: where it
    is, and the two ways to point at it (None when that is not the case)."""
    if text.startswith("~") or Path(text).is_absolute() or where.label == "<task>":
        return None
    task_dir = task_dir_of(where.label)
    beside = task_dir / text
    if task_dir == base_of(where) or not beside.exists():
        return None
    return (
        f"It exists beside the task file, at {beside}. Run skyform from the task file's "
        f"folder (cd {shlex.quote(str(task_dir))}), or write the path relative to "
        f"{base_of(where)} or as an absolute path."
    )


def _shown(raw: object, resolved: str) -> str:
    """The path as written (before $VAR substitution, which may hold a secret)."""
    return repr(raw) if isinstance(raw, str) else repr(resolved)
