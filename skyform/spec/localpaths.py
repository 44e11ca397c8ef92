"""What a task needs from this machine, checked when the file is read (validate, plan).

A missing workdir or file_mounts source, a destination that climbs out with `..`, or an env
value the OS cannot carry (NUL) would otherwise pass planning and fail only after the
cluster was provisioned — billed, and left in INIT. Relative paths start at the task file's
folder (the current directory for text with no file), `~` is this user's home. Bucket URIs
(`s3://...`) are not local paths and are left to the storage code.
"""

from __future__ import annotations

from pathlib import Path

from skyform.jobvalues import mount_destination_problem
from skyform.spec.errors import Where
from skyform.spec.yamlpos import Path as FieldPath

RELATIVE_NOTE = "relative paths start at the task file's folder"


def task_dir_of(label: str) -> Path:
    """Where a task's relative paths start: its file's folder, or the current directory."""
    return Path.cwd() if label == "<task>" else Path(label).resolve().parent


def local_path(text: str, task_dir: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else task_dir / path


def check_workdir(workdir: str, raw: object, where: Where) -> None:
    """A local workdir must be an existing directory (a git workdir is not checked here)."""
    path = local_path(workdir, task_dir_of(where.label))
    shown = _shown(raw, workdir)
    if not path.exists():
        where.fail(
            ("workdir",),
            f"workdir {shown} does not exist{_looked_at(workdir, where)}",
            "Create the directory, or point `workdir:` at the folder to sync to the nodes.",
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
    if not local_path(source.strip(), task_dir_of(where.label)).exists():
        where.fail(
            path,
            f"file mount source {_shown(raw, source)} does not exist"
            f"{_looked_at(source.strip(), where)}",
            "Create it, fix the path, or use a bucket URI (s3://..., gs://...).",
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
    return f" ({RELATIVE_NOTE}: {task_dir_of(where.label)})"


def _shown(raw: object, resolved: str) -> str:
    """The path as written (before $VAR substitution, which may hold a secret)."""
    return repr(raw) if isinstance(raw, str) else repr(resolved)
