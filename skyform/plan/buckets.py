"""Buckets in the plan: which buckets a DAG uses, where they are, what they cost to read.

Pure. The facts about existing buckets (exists? region? size of the prefix read?) are read at
plan time by skyform.storage and passed in; this module turns them into optimizer anchors
(so the egress from a bucket's real region to each candidate is priced) and, once tasks are
placed, into the plan's PlannedBuckets: `create` for a bucket skyform makes (in the
cluster's region when its cloud is the store's), `noop` for one that exists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from skyform.digests import sha256
from skyform.errors import PlanError
from skyform.infra import OBJECT_STORES
from skyform.plan.catalog.offer import Location
from skyform.plan.model import Action, BucketMount, JobSpec, PlacedOffer, PlannedBucket
from skyform.plan.optimizer.problem import Anchor
from skyform.spec import Dag
from skyform.spec.models import BucketSpec

STORE_CLOUD = {"s3": "aws", "gcs": "gcp", "r2": "cloudflare"}
DEFAULT_REGION = {"s3": "us-east-1", "gcs": "us-central1", "r2": "auto"}  # SkyPilot's defaults
SCHEME = {"s3": "s3", "gcs": "gs", "r2": "r2"}


@dataclass(frozen=True)
class BucketFact:
    """What plan time learned about one bucket. `exists` None: it could not be read (`note`
    says why). `created_by_skyform`: state records that skyform made it."""

    store: str
    name: str
    exists: bool | None
    region: str | None = None
    size_gb: float | None = None  # of the prefix a task reads; None when not cheap to know
    created_by_skyform: bool = False
    note: str = ""
    uploaded: str | None = None  # the digest of the sources skyform last uploaded into it


@dataclass(frozen=True)
class BucketUse:
    task: int
    dst: str
    spec: BucketSpec


def key(store: str, name: str) -> str:
    return f"{SCHEME.get(store, store)}://{name}"


def bucket_uses(dag: Dag) -> list[BucketUse]:
    return [
        BucketUse(v, dst, mount.bucket)
        for v, task in enumerate(dag.tasks)
        for dst, mount in sorted(task.file_mounts.items())
        if mount.bucket is not None
    ]


def stores_to_read(dag: Dag, use: BucketUse) -> list[str]:
    """The stores a bucket may end up in: its own, else those of the clouds the task may run
    on (on-prem nodes use S3 or an S3-compatible endpoint)."""
    if use.spec.store is not None:
        return [use.spec.store]
    stores: set[str] = set()
    for request in dag.tasks[use.task].resources.alternatives():
        if request.cloud is None:
            stores |= {"s3", "gcs"}
        else:
            stores.add(OBJECT_STORES.get(request.cloud, "s3"))
    return sorted(stores)


def store_for(spec: BucketSpec, offer: PlacedOffer) -> str:
    return spec.store or OBJECT_STORES.get(offer.cloud, "s3")


def bucket_anchors(
    dag: Dag, facts: Mapping[str, BucketFact], inputs_anchors: Sequence[Anchor]
) -> list[Anchor]:
    """The data the tasks read from existing buckets of known region, as anchors. A task's
    `inputs:` entry naming the bucket gives the size (and its anchor, whose region was only
    guessed from the URI scheme, is replaced); else the size of the prefix read."""
    out: list[Anchor] = []
    for use in bucket_uses(dag):
        if use.spec.store is None:
            continue
        fact = facts.get(key(use.spec.store, use.spec.name))
        if fact is None or not fact.exists or fact.region is None:
            continue
        where = Location(STORE_CLOUD[fact.store], fact.region)
        uri = key(fact.store, fact.name) + (f"/{use.spec.prefix}" if use.spec.prefix else "")
        named = [
            a
            for a in inputs_anchors
            if a.task == use.task and a.label.rstrip("/").startswith(key(fact.store, fact.name))
        ]
        if named:
            out += [Anchor(a.task, where, a.gigabytes, a.label) for a in named]
        elif fact.size_gb:
            out.append(Anchor(use.task, where, fact.size_gb, uri))
    return out


def merge_anchors(inputs_anchors: Sequence[Anchor], buckets: Sequence[Anchor]) -> list[Anchor]:
    """Bucket anchors replace the `inputs:` anchors of the same data (same task and label)."""
    replaced = {(a.task, a.label) for a in buckets}
    return [a for a in inputs_anchors if (a.task, a.label) not in replaced] + list(buckets)


def bucket_mount(spec: BucketSpec, offer: PlacedOffer) -> BucketMount:
    return BucketMount(
        bucket=spec.name,
        store=store_for(spec, offer),
        prefix=spec.prefix,
        mode=spec.mode,
        read_only=spec.read_only,
        rclone_flags=list(spec.rclone_flags),
    )


def planned_buckets(
    dag: Dag,
    offers: Mapping[int, PlacedOffer],
    clusters: Mapping[int, str],
    facts: Mapping[str, BucketFact],
    default_region: str | None = None,
    sources: Mapping[str, str] | None = None,
) -> list[PlannedBucket]:
    """One PlannedBucket per bucket the placed DAG uses. Raises PlanError (at plan time, never
    at apply) for a bucket URI that does not exist, a new bucket a COPY would read nothing
    from, and one name used with two stores. `sources`: the digest of each local source now
    (storage/sources.py); an existing bucket whose sources differ from its last upload is
    `update` (uploaded again)."""
    found: dict[str, PlannedBucket] = {}
    for use in bucket_uses(dag):
        spec, offer = use.spec, offers[use.task]
        store = store_for(spec, offer)
        uri = key(store, spec.name)
        fact = facts.get(uri)
        label = f"file mount {use.dst} of {dag.tasks[use.task].label(use.task)}"
        if fact is not None and fact.exists is False and spec.must_exist:
            raise PlanError(
                f"{label}: bucket {uri} does not exist",
                "Check the name (and config.yaml `storage.endpoint` for an S3-compatible "
                "store), or give 'name:' without 'source:' to have skyform create it.",
            )
        absent = fact is not None and fact.exists is False
        if absent and not spec.must_exist and spec.mode == "COPY" and not spec.uploads:
            raise PlanError(
                f"{label}: COPY of the new, empty bucket {uri} would copy nothing",
                "Use mode MOUNT for a scratch bucket, or give 'source:' with data to upload.",
            )
        previous = next((b for b in found.values() if b.name == spec.name), None)
        if previous is not None and previous.store != store:
            raise PlanError(
                f"{label}: bucket {spec.name} is used with store {store} and {previous.store}",
                "A bucket lives in one store: give the same 'store:' everywhere it is used.",
            )
        planned = _planned(spec, store, offer, fact, clusters[use.task])
        if planned.action is Action.CREATE:
            planned = planned.model_copy(
                update={"region": _created_region(store, offer, default_region)}
            )
        if fact is None or fact.exists is None:
            planned = planned.model_copy(update={"note": _unread(fact, planned.action, spec)})
        found[uri] = _merge(previous, planned)
    digests = sources or {}
    planned_all = [_with_sources(b, facts.get(b.uri), digests) for b in found.values()]
    return sorted(planned_all, key=lambda b: (b.store, b.name))


def sources_digest(uploads: Sequence[str], digests: Mapping[str, str]) -> str | None:
    """One digest over a bucket's local sources (None: one of them could not be read)."""
    if not uploads or any(s not in digests for s in uploads):
        return None
    return sha256(json.dumps([[s, digests[s]] for s in sorted(uploads)]))


def _with_sources(
    bucket: PlannedBucket, fact: BucketFact | None, digests: Mapping[str, str]
) -> PlannedBucket:
    digest = sources_digest(bucket.uploads, digests)
    if digest is None:
        return bucket
    update: dict = {"source_digest": digest}
    if bucket.action is Action.NOOP and (fact is None or fact.uploaded != digest):
        update["action"] = Action.UPDATE
        update["note"] = (
            "re-upload: the sources changed since skyform last uploaded them"
            if fact is not None and fact.uploaded is not None
            else "re-upload: skyform has no record of uploading these sources into it"
        )
    return bucket.model_copy(update=update)


def _planned(
    spec: BucketSpec, store: str, offer: PlacedOffer, fact: BucketFact | None, cluster: str
) -> PlannedBucket:
    exists = fact is not None and fact.exists is True
    # unread: apply creates it when missing — unless all there is to do is copy it out
    create = not spec.must_exist and not exists and not copied_only(spec)
    return PlannedBucket(
        name=spec.name,
        store=store,
        region=fact.region if fact is not None and exists else None,
        action=Action.CREATE if create else Action.NOOP,
        persistent=spec.persistent,
        created_by_skyform=create or bool(fact and fact.created_by_skyform),
        uploads=list(spec.uploads),
        used_by=[cluster],
        size_gb=fact.size_gb if fact is not None and exists else None,
    )


def _merge(previous: PlannedBucket | None, new: PlannedBucket) -> PlannedBucket:
    if previous is None:
        return new
    return previous.model_copy(
        update={
            "used_by": sorted({*previous.used_by, *new.used_by}),
            "uploads": sorted({*previous.uploads, *new.uploads}),
            "persistent": previous.persistent and new.persistent,
        }
    )


def _created_region(store: str, offer: PlacedOffer, default_region: str | None) -> str:
    """Next to the cluster when the cluster runs on the store's cloud; else the configured
    region, else SkyPilot's default for the store."""
    if STORE_CLOUD.get(store) == offer.cloud:
        return offer.region
    if store == "s3" and default_region:
        return default_region
    return DEFAULT_REGION[store]


def copied_only(spec: BucketSpec) -> bool:
    """A bucket named to be copied out, with nothing to upload: made new, it would be empty."""
    return not spec.must_exist and spec.mode == "COPY" and not spec.uploads


def _unread(fact: BucketFact | None, action: Action, spec: BucketSpec) -> str:
    why = (fact.note if fact is not None else "") or "not read at plan time"
    if action is Action.CREATE:
        return f"could not check whether it exists ({why}); apply creates it when missing"
    if copied_only(spec):
        return (
            f"not read at plan time ({why}); apply reads it, and stops before any cluster "
            "if it does not exist (a COPY of a new, empty bucket would copy nothing)"
        )
    return f"region unknown ({why}); egress from it is not priced"


def copies_to_refresh(
    buckets: Sequence[PlannedBucket], jobs: Mapping[str, JobSpec]
) -> dict[str, dict[str, str]]:
    """cluster -> {file mount: bucket URI} for each COPY of a bucket the plan uploads again:
    a COPY is a snapshot on the nodes, so it is refreshed there too (a cluster that stays
    is updated: apply copies the bucket again)."""
    again = {b.uri for b in buckets if b.action is Action.UPDATE}
    found: dict[str, dict[str, str]] = {}
    for cluster, job in jobs.items():
        for dst, mount in sorted(job.file_mounts.items()):
            used = mount.bucket
            if used is not None and used.mode == "COPY" and key(used.store, used.bucket) in again:
                found.setdefault(cluster, {})[dst] = key(used.store, used.bucket)
    return found
