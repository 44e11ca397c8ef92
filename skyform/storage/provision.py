"""Apply time, before any cluster: create the plan's new buckets, record them, upload sources.

Uploads run from this machine with rclone, like SkyPilot's `aws s3 sync` (no --delete, links
not followed): a directory's contents land at the bucket root, each entry of a list at
<bucket>/<basename>; `.skyignore` (else `.gitignore`) is honoured and `.git` never sent. They
run on every apply, so a changed local directory reaches the bucket again.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from skyform.config import Config, StorageSettings
from skyform.errors import StorageError
from skyform.infra import OBJECT_STORES
from skyform.plan.buckets import BucketFact, key
from skyform.plan.model import Action, Plan, PlannedBucket
from skyform.state.buckets import BucketRecord, get_bucket, put_bucket
from skyform.state.db import StateDB
from skyform.storage.client import client_for, gcs_rclone_env, s3_access
from skyform.storage.nodes import REMOTE
from skyform.storage.sources import local_source, upload_files

UPLOAD_FLAGS = ("--transfers=32", "--checkers=32", "--no-update-modtime")


def ensure_buckets(
    plan: Plan,
    task_dir: Path,
    db: StateDB,
    settings: StorageSettings,
    on_event: Callable[[str], None] = lambda message: None,
    *,
    config: Config | None = None,
    plan_digest: str | None = None,
) -> None:
    for bucket in plan.buckets:
        if bucket.unread:
            read_now(bucket, plan, settings, on_event)
        home = bucket_home(bucket, plan, settings) if bucket.action is Action.CREATE else None
        if home == "cluster":
            _record(bucket, plan, db, settings, stack_owned=True)
            on_event(f"bucket {bucket.uri} is made by the Pulumi stack of {bucket.used_by[0]}")
        elif home == "storage":
            from skyform.stacks.pulumi.storage import StorageStacks

            stacks = StorageStacks(config or Config(), plan_digest)
            # recorded first: a failed `up` may have made it, and `storage delete` finds it
            _record(bucket, plan, db, settings, storage_stack=stacks.qualified(bucket))
            stack = stacks.up(bucket, keep=bucket.persistent, on_event=on_event)
            on_event(f"created bucket {bucket.uri} in {bucket.region} (Pulumi stack {stack})")
        elif home == "client":
            _create(bucket, plan, db, settings)
            on_event(f"created bucket {bucket.uri} in {bucket.region}")
        elif bucket.created_by_skyform:
            record = get_bucket(db, bucket.uri)
            if record is not None:
                users = sorted({*record.used_by, *bucket.used_by})
                put_bucket(db, record.model_copy(update={"used_by": users}))
        if bucket.uploads and not must_upload(bucket):
            on_event(f"{bucket.uri}: {', '.join(bucket.uploads)} as last uploaded")
            continue
        for source in bucket.uploads:
            sent = upload(bucket, source, task_dir, settings, len(bucket.uploads) > 1)
            on_event(f"uploaded {source} to {bucket.uri} ({sent} files)")
        record = get_bucket(db, bucket.uri) if bucket.uploads else None
        if record is not None:  # what was sent, for the next plan to compare with
            put_bucket(db, record.model_copy(update={"uploaded_digest": bucket.source_digest}))


def read_now(
    bucket: PlannedBucket, plan: Plan, settings: StorageSettings, on_event: Callable[[str], None]
) -> None:
    """Read a bucket the plan could not, before any cluster is made: a missing one stops
    apply here. Unreadable from this machine too, it is left to the nodes (an instance role
    may reach what this machine cannot), which fail the job if it is missing."""
    try:
        fact = client_for(bucket.store, settings).read(bucket.name)
    except StorageError as exc:
        fact = BucketFact(bucket.store, bucket.name, None, note=exc.message)
    if fact.exists is None:
        on_event(f"{bucket.uri}: cannot be read here either ({fact.note}); the nodes read it")
        return
    if fact.exists:
        on_event(f"{bucket.uri}: read now: it exists")
        return
    copied = any(
        m.bucket is not None
        and m.bucket.mode == "COPY"
        and key(m.bucket.store, m.bucket.bucket) == bucket.uri
        for task in plan.tasks
        for m in task.job.file_mounts.values()
    )
    what = "COPY of the new, empty bucket" if copied and not bucket.uploads else None
    raise StorageError(
        f"bucket {bucket.uri} does not exist"
        + (f" ({what} {bucket.uri} would copy nothing)" if what else ""),
        "Check its name (and config.yaml `storage.endpoint` for an S3-compatible store), "
        "or upload data into it first; nothing was created.",
    )


def must_upload(bucket: PlannedBucket) -> bool:
    """A bucket the plan creates or re-uploads (`update`); one whose sources are as last
    uploaded is left alone. A plan without digests (older skyform) uploads every time."""
    return bucket.action is not Action.NOOP or bucket.source_digest is None


def _create(bucket: PlannedBucket, plan: Plan, db: StateDB, settings: StorageSettings) -> None:
    client = client_for(bucket.store, settings)
    region = bucket.region or "us-east-1"
    if not client.read(bucket.name).exists:  # unread at plan time: it may exist by now
        tags = {"skyform-managed": "true", "skyform-clusters": "_".join(bucket.used_by)[:250]}
        client.create(bucket.name, region, tags)
    elif get_bucket(db, bucket.uri) is None:
        raise StorageError(
            f"bucket {bucket.uri} exists and skyform did not create it",
            "Use it as 'source: " + bucket.uri + "' (skyform never deletes it), or pick "
            "another name.",
        )
    _record(bucket, plan, db, settings)


BucketHome = Literal["cluster", "storage", "client"]


def bucket_home(bucket: PlannedBucket, plan: Plan, settings: StorageSettings) -> BucketHome:
    """Who makes a bucket the plan creates (and so who deletes it).

    - "cluster": the one cluster's Pulumi stack (`made_by_stack`), gone with the stack;
    - "storage": a Pulumi storage stack of its own, for a bucket in AWS's or GCP's own store
      used by an aws/gcp cluster that must outlive one cluster's stack: persistent (kept at
      `down`), or `persistent: false` but with uploads (made before any cluster), shared, or
      in another region (destroyed at `down` once no cluster uses it);
    - "client": skyform's bucket client, for local/ssh/kubernetes clusters and for
      S3-compatible stores (an endpoint in config.yaml `storage:` or AWS_ENDPOINT_URL,
      r2): there is no Pulumi on those infras.
    """
    if made_by_stack(bucket, plan):  # the cluster's own program registers it, as before
        return "cluster"
    if bucket.store not in OBJECT_STORES.values() or _s3_compatible(bucket, settings):
        return "client"
    clouds = set()
    for cluster in bucket.used_by:
        placement = plan.placement_for(cluster)
        if placement is not None:
            clouds.add(placement.offer.cloud)
    if any(OBJECT_STORES.get(cloud) == bucket.store for cloud in clouds):
        return "storage"
    return "client"


def _s3_compatible(bucket: PlannedBucket, settings: StorageSettings) -> bool:
    return bucket.store == "s3" and s3_access(settings, "s3").endpoint is not None


def made_by_stack(bucket: PlannedBucket, plan: Plan) -> bool:
    """A scratch bucket (`persistent: false`, nothing to upload) of one cluster on aws/gcp,
    in its cloud's store and region, is a resource of that cluster's Pulumi stack."""
    if bucket.persistent or bucket.uploads or len(bucket.used_by) != 1:
        return False
    placement = plan.placement_for(bucket.used_by[0])
    if placement is None:
        return False
    offer = placement.offer
    return OBJECT_STORES.get(offer.cloud) == bucket.store and offer.region == bucket.region


def _record(
    bucket: PlannedBucket,
    plan: Plan,
    db: StateDB,
    settings: StorageSettings,
    *,
    stack_owned: bool = False,
    storage_stack: str | None = None,
) -> None:
    endpoint = s3_access(settings, bucket.store).endpoint if bucket.store != "gcs" else None
    put_bucket(
        db,
        BucketRecord(
            name=bucket.name,
            store=bucket.store,
            region=bucket.region or "us-east-1",
            endpoint=endpoint,
            persistent=bucket.persistent,
            used_by=list(bucket.used_by),
            created_at=time.time(),
            task=plan.task.path,
            stack_owned=stack_owned,
            storage_stack=storage_stack,
        ),
    )


def upload(
    bucket: PlannedBucket, source: str, task_dir: Path, settings: StorageSettings, listed: bool
) -> int:
    local = local_source(source, task_dir)
    if not local.exists():
        raise StorageError(f"upload to {bucket.uri}: {source} does not exist ({local})")
    if local.is_dir():
        root, files = local, upload_files(local)
        dest = f"{REMOTE}:{bucket.name}" + (f"/{local.name}" if listed else "")
    else:
        root, files, dest = local.parent, [local.name], f"{REMOTE}:{bucket.name}"
    with tempfile.NamedTemporaryFile("w", prefix="skyform-upload-", suffix=".txt") as listing:
        listing.write("".join(f"{f}\n" for f in files))
        listing.flush()
        run_rclone(
            ["copy", *UPLOAD_FLAGS, f"--files-from-raw={listing.name}", str(root), dest],
            rclone_env(bucket.store, settings),
            f"upload {source} to {bucket.uri}",
        )
    return len(files)


def rclone_env(store: str, settings: StorageSettings) -> dict[str, str]:
    if store == "gcs":
        return gcs_rclone_env(REMOTE)
    return s3_access(settings, store).rclone_env(REMOTE)


def run_rclone(args: list[str], env: Mapping[str, str], what: str) -> None:
    # rclone's S3 SDK refuses AWS_CA_BUNDLE with its own HTTP transport: hand it over as
    # rclone's --ca-cert instead
    environ = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    bundle = os.environ.get("AWS_CA_BUNDLE")
    extra = [f"--ca-cert={bundle}"] if bundle and Path(bundle).is_file() else []
    try:
        proc = subprocess.run(
            ["rclone", *args, *extra],
            env={**environ, **env},
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise StorageError(
            f"{what}: rclone is not installed on this machine",
            "Install it: apt-get install rclone (or https://rclone.org/install/).",
        ) from None
    if proc.returncode != 0:
        detail = " / ".join(proc.stderr.strip().splitlines()[-3:])
        raise StorageError(f"{what} failed: {detail}")
