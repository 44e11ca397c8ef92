"""Bucket mounts a cluster that stays must have attached again (pure): the plan marks the
cluster `~` and apply attaches them without running the job again.

- A COPY of a bucket the plan uploads again (its local source changed): the copy on the
  nodes is a snapshot, refreshed with the bucket ("COPY refresh").
- A MOUNT or MOUNT_CACHED that a node does not have attached (found at plan time: the
  cluster was stopped and started, a node rebooted, rclone died): writes would land in a
  plain directory and never reach the bucket, so it is mounted again. Only a mount both the
  job last applied and the desired job have: a new mount is the job's change, not this.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from skyform.plan.model import AttributeChange, JobSpec

FUSED = ("MOUNT", "MOUNT_CACHED")  # the modes that live as a mount on the node


def fused_mounts(job: JobSpec | None) -> dict[str, str]:
    """file mount -> mode, for the job's bucket mounts that are FUSE mounts on the nodes."""
    if job is None:
        return {}
    return {
        dst: m.bucket.mode
        for dst, m in job.file_mounts.items()
        if m.bucket is not None and m.bucket.mode in FUSED
    }


def attach_again(
    refresh: Mapping[str, str],
    detached: Mapping[str, str],
    before: JobSpec | None,
    after: JobSpec | None,
) -> tuple[list[str], list[AttributeChange], str | None]:
    """(file mounts to attach again, their attribute lines, the reason in words; None:
    nothing to attach).

    `refresh`: file mount -> bucket URI of COPYs whose bucket is uploaded again;
    `detached`: file mount -> mode of the FUSE mounts found missing on a node."""
    wanted = fused_mounts(after)
    had = fused_mounts(before)
    missing = {d: m for d, m in detached.items() if wanted.get(d) == m and had.get(d) == m}
    attrs = [
        AttributeChange(path=_path(dst), before="not attached", after=f"{mode} again")
        for dst, mode in sorted(missing.items())
    ] + [
        AttributeChange(path=_path(dst), before=f"COPY of {uri}", after=f"COPY of {uri} again")
        for dst, uri in sorted(refresh.items())
    ]
    words = [f"{mode} {dst} not attached" for dst, mode in sorted(missing.items())]
    if refresh:
        copies = ", ".join(f"{dst} ({uri} uploaded again)" for dst, uri in sorted(refresh.items()))
        words.append(f"COPY refresh: {copies}")
    dsts = sorted({*refresh, *missing})
    return dsts, attrs, ("; ".join(words) if words else None)


def _path(dst: str) -> str:
    return f"file_mounts[{json.dumps(dst)}]"
