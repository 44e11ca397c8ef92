"""The buckets block of a plan: `+ bucket "my-ckpt" (gcs, europe-west4, persistent)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from skyform.cli.render.fmt import plain
from skyform.plan.parts import Action

if TYPE_CHECKING:  # the models, or the strict reader's views of them (plan/planview.py)
    from skyform.plan.model import PlannedBucket


def bucket_line(bucket: PlannedBucket, shown: Callable[[str], str] = str) -> str:
    """`shown`: an upload's recorded path as the reviewer reads it (Plan.shown_path)."""
    region = bucket.region or "region unknown"
    extra: list[str] = []
    life = "persistent" if bucket.persistent else "deleted at down"
    if bucket.action is Action.CREATE:
        head = f'+ bucket "{bucket.name}" ({bucket.store}, {region}, {life})'
    else:
        owner = f"created by skyform, {life}" if bucket.created_by_skyform else "not skyform's"
        symbol = bucket.action.symbol if bucket.action is Action.UPDATE else " "
        head = f'{symbol} bucket "{bucket.name}" ({bucket.store}, {region}, exists, {owner})'
        if bucket.unread:
            head = f'  bucket "{bucket.name}" ({bucket.store}, not read at plan time)'
        extra = [f"{plain(bucket.size_gb, 3)} GB read"] if bucket.size_gb else []
    extra += [f"uploads {', '.join(shown(s) for s in bucket.uploads)}"] if bucket.uploads else []
    extra += [f"used by {', '.join(bucket.used_by)}"] if bucket.used_by else []
    extra += [bucket.note] if bucket.note else []
    return head + (f": {'; '.join(extra)}" if extra else "")


def bucket_lines(buckets: list[PlannedBucket], shown: Callable[[str], str] = str) -> list[str]:
    if not buckets:
        return []
    return ["Buckets:", *(f"  {bucket_line(b, shown)}" for b in buckets)]
