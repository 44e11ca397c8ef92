"""What changed in the job a cluster runs, in words a reviewer reads (pure).

With the job last applied (recorded in state) the diff names each field that changed and
carries its old and new text — `run` and `setup` in full, so the plan shows the lines that
changed rather than two digests. The workdir's contents are compared file by file against
what the last job synced. A cluster recorded without its job (applied by an older skyform)
falls back to the digests.
"""

from __future__ import annotations

from skyform.plan.model import AttributeChange, ClusterSpec, JobSpec, WorkdirFiles

LISTED_FILES = 5  # changed files named in the diff; the rest are counted


def _pairs(items: dict[str, str]) -> str | None:
    return ", ".join(f"{k}={v}" for k, v in sorted(items.items())) or None


def _mounts(job: JobSpec) -> str | None:
    return (
        ", ".join(
            f"{dst}: {m.source}" + (f" ({m.mode})" if m.mode else "")
            for dst, m in sorted(job.file_mounts.items())
        )
        or None
    )


FIELDS = (
    ("setup", lambda j: j.setup),
    ("run", lambda j: j.run),
    ("envs", lambda j: _pairs(j.envs)),
    ("workdir", lambda j: j.workdir),
    ("file_mounts", _mounts),
    ("checkpoint_dir", lambda j: j.checkpoint_dir),
    ("secrets", lambda j: ", ".join(j.secrets) or None),  # names: values are never recorded
)


def _field_changes(before: JobSpec, after: JobSpec) -> list[AttributeChange]:
    found = []
    for path, get in FIELDS:
        old, new = get(before), get(after)
        if old != new:
            found.append(AttributeChange(path=path, before=old, after=new))
    return found


def _digest_changes(before: ClusterSpec, after: ClusterSpec) -> list[AttributeChange]:
    found = []
    if before.setup_digest != after.setup_digest:
        found.append(
            AttributeChange(
                path="setup_digest", before=before.setup_digest, after=after.setup_digest
            )
        )
    if before.job_digest != after.job_digest:
        found.append(AttributeChange(path="job", before=before.job_digest, after=after.job_digest))
    return found


def files_text(count: int) -> str:
    return f"{count} file{'s' if count != 1 else ''}"


def files_summary(changed: list[str], added: list[str], removed: list[str]) -> str:
    parts = []
    for word, paths in (("changed", changed), ("added", added), ("removed", removed)):
        if paths:
            parts.append(f"{len(paths)} {word}")
    names = (changed + added + removed)[:LISTED_FILES]
    more = len(changed) + len(added) + len(removed) - len(names)
    return ", ".join(parts) + ": " + ", ".join(names) + (f" and {more} more" if more else "")


def _files_change(before: WorkdirFiles | None, after: WorkdirFiles | None):
    if before is None or after is None:
        return None, 0
    changed, added, removed = before.compare(after)
    count = len(changed) + len(added) + len(removed)
    if not count:
        return None, 0
    change = AttributeChange(
        path="workdir_files",
        before=files_text(len(before.files)),
        after=f"{files_text(len(after.files))} ({files_summary(changed, added, removed)})",
    )
    return change, count


def _setup_cause(attrs: list[AttributeChange]) -> str:
    """Why setup runs again: its text, or only the envs/secrets it sees."""
    paths = {a.path for a in attrs}
    seen = [p for p in ("envs", "secrets") if p in paths]
    if "setup" in paths or not seen:
        return "setup changed"
    return f"{' and '.join(seen)} changed (setup sees them)"


def workdir_changed(before: WorkdirFiles | None, after: WorkdirFiles | None) -> bool:
    """The workdir sync would send other files than the last job's (unknown: no)."""
    return before is not None and after is not None and any(before.compare(after))


def job_changes(
    before: ClusterSpec,
    after: ClusterSpec,
    *,
    before_job: JobSpec | None,
    after_job: JobSpec | None,
    before_files: WorkdirFiles | None,
    after_files: WorkdirFiles | None,
) -> tuple[list[AttributeChange], str | None]:
    """(attribute changes, reason) for the job on a cluster that stays; reason None: none."""
    digests_differ = (before.setup_digest, before.job_digest) != (
        after.setup_digest,
        after.job_digest,
    )
    attrs: list[AttributeChange] = []
    if digests_differ:
        # the recorded job is only trusted when it is the one the recorded digests describe
        if (
            before_job is not None
            and after_job is not None
            and before_job.job_digest == before.job_digest
        ):
            attrs = _field_changes(before_job, after_job)
        attrs = attrs or _digest_changes(before, after)
    files, count = _files_change(before_files, after_files)
    if files is not None:
        attrs.append(files)
    if not attrs:
        return [], None
    if before.setup_digest != after.setup_digest:
        return attrs, f"{_setup_cause(attrs)}: setup and the job will run again"
    words = [
        f"{a.path} changed" for a in attrs if a.path not in ("workdir_files", "job", "setup_digest")
    ]
    if any(a.path == "job" for a in attrs):
        words.append("the job changed (run, envs, workdir or file mounts)")
    if files is not None:
        words.append(f"workdir changed ({files_text(count)})")
    return attrs, "; ".join(words) + ": the job will run again"
