"""A task's local paths as a plan records them: portable between checkouts.

The loader makes a relative `workdir`, file mount source or bucket upload absolute from the
directory skyform runs in (the base: as `sky launch` resolves them). A plan is committed and
applied from a clean clone at another path, so it records each path inside the base relative
to the base, and the base relative to the plan file's directory (as it records the task
path): the same task planned in two checkouts gives the same plan, digests included. A path
outside the base (`~/x`, an absolute path elsewhere) is recorded as written.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from skyform.spec.dag import Dag
from skyform.spec.models import BucketSpec, FileMount, TaskSpec


def recorded_path(path: str, base: str | None) -> str:
    """`path` as a plan records it: relative to `base` when inside it, else as it is."""
    if base is None or not os.path.isabs(path):
        return path
    if path == base:
        return "."
    if not path.startswith(base.rstrip("/") + "/"):
        return path
    return PurePosixPath(os.path.relpath(path, base)).as_posix()


def portable_dag(dag: Dag) -> Dag:
    """`dag` with its paths inside `dag.relative_to` recorded relative to it (a dag without
    relative paths as it is)."""
    base = dag.relative_to
    if base is None:
        return dag
    tasks = [_task(t, base) for t in dag.tasks]
    return dag.model_copy(update={"tasks": tasks})


def _task(task: TaskSpec, base: str) -> TaskSpec:
    workdir = recorded_path(task.workdir, base) if isinstance(task.workdir, str) else task.workdir
    mounts = {dst: _mount(m, base) for dst, m in task.file_mounts.items()}
    return task.model_copy(update={"workdir": workdir, "file_mounts": mounts})


def _mount(mount: FileMount, base: str) -> FileMount:
    source = mount.source
    if isinstance(source, str):
        source = recorded_path(source, base)
    elif isinstance(source, tuple):
        source = tuple(recorded_path(s, base) for s in source)
    bucket = mount.bucket
    if bucket is not None and bucket.uploads:
        bucket = _bucket(bucket, base)
    return mount.model_copy(update={"source": source, "bucket": bucket})


def _bucket(bucket: BucketSpec, base: str) -> BucketSpec:
    return bucket.model_copy(
        update={"uploads": tuple(recorded_path(s, base) for s in bucket.uploads)}
    )
