"""Created buckets in the Pulumi programs, under the mock runtime: a `persistent: false` bucket
is a resource of its cluster's stack (right region, private, versioning off, tags/labels,
destroyed with the stack); a persistent one has a storage stack of its own, protected."""

from __future__ import annotations

import importlib

import pulumi
from pulumi_harness import program, run_program
from pulumi_specs import AWS_M5, GCP_N2, PLAN_DIGEST, context, spec

from skyform.plan.model import Action, PlannedBucket
from skyform.stacks.pulumi.inputs import program_inputs, storage_inputs

AWS_BUCKET = "aws:s3/bucket:Bucket"
GCS_BUCKET = "gcp:storage/bucket:Bucket"


def _bucket(name, store, region, *, persistent=False, action=Action.CREATE, users=("c1",)):
    return PlannedBucket(
        name=name,
        store=store,
        region=region,
        action=action,
        persistent=persistent,
        created_by_skyform=action is Action.CREATE,
        used_by=list(users),
    )


def test_aws_cluster_stack_owns_its_ephemeral_bucket_only():
    buckets = (
        _bucket("scratch-b", "s3", "us-west-2"),
        _bucket("kept-b", "s3", "us-west-2", persistent=True),
        _bucket("theirs", "s3", "us-west-2", action=Action.NOOP),
        _bucket("other-cluster", "s3", "us-west-2", users=("c2",)),
    )
    got = run_program(program("aws", program_inputs(spec(AWS_M5), context(buckets=buckets))))
    (made,) = got.of_type(AWS_BUCKET)
    assert made.provider == "aws"  # the cluster's provider: its region
    assert got.of_type("pulumi:providers:aws")[0].inputs["region"] == "us-west-2"
    assert made.inputs == {
        "bucket": "scratch-b",
        "forceDestroy": True,  # goes (with its objects) when the cluster's stack is destroyed
        "tags": {
            "skyform:cluster": "c1",
            "skyform:plan": PLAN_DIGEST,
            "skyform:bucket": "scratch-b",
        },
    }
    (private,) = got.of_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    assert private.inputs == {
        "bucket": "bucket-scratch-b-id",  # the bucket resource's id
        "blockPublicAcls": True,
        "blockPublicPolicy": True,
        "ignorePublicAcls": True,
        "restrictPublicBuckets": True,
    }
    assert not [r for r in got.resources if "ersioning" in r.type]  # versioning stays off


def test_gcp_cluster_stack_bucket_in_the_cluster_region_with_labels():
    buckets = (_bucket("gcs-scratch", "gcs", "europe-west4"),)
    got = run_program(program("gcp", program_inputs(spec(GCP_N2), context(buckets=buckets))))
    (made,) = got.of_type(GCS_BUCKET)
    assert made.inputs["name"] == "gcs-scratch"
    assert made.inputs["location"] == "EUROPE-WEST4"
    assert made.inputs["forceDestroy"] is True
    assert made.inputs["publicAccessPrevention"] == "enforced"
    assert made.inputs["uniformBucketLevelAccess"] is True
    assert made.inputs["versioning"] == {"enabled": False}
    assert made.inputs["labels"]["skyform-cluster"] == "c1"
    assert made.inputs["labels"]["skyform-bucket"] == "gcs-scratch"


def test_no_buckets_leaves_the_cluster_inputs_as_they_were():
    assert "buckets" not in program_inputs(spec(AWS_M5), context())
    assert "buckets" not in program_inputs(spec(GCP_N2), context())


def _storage_run(bucket, keep=True):
    """The storage program's run, and each resource's `protect` option (which the mock
    runtime does not pass on: a stack transformation sees it)."""
    inputs = storage_inputs(bucket, context(plan_digest=PLAN_DIGEST), keep=keep)
    module = importlib.import_module(f"skyform.stacks.pulumi.{inputs['cloud']}.program")
    protected: dict[str, bool] = {}

    def record(args):
        protected[args.name] = bool(args.opts.protect)

    def go():
        pulumi.runtime.register_stack_transformation(record)
        module.register_storage(inputs)

    run = run_program(go, stack="storage-" + bucket.name)
    return run, protected


def test_persistent_bucket_has_a_protected_storage_stack_that_keeps_its_objects():
    got, protected = _storage_run(
        _bucket("kept-b", "s3", "eu-central-1", persistent=True, users=("a", "b"))
    )
    assert got.of_type("pulumi:providers:aws")[0].inputs["region"] == "eu-central-1"
    (made,) = got.of_type(AWS_BUCKET)
    assert made.inputs["forceDestroy"] is False
    # `pulumi destroy` refuses it until an update lifts the protection
    assert protected == {"aws": False, "bucket-kept-b": True, "bucket-kept-b-private": True}
    assert made.inputs["tags"] == {
        "skyform:bucket": "kept-b",
        "skyform:clusters": "a_b",
        "skyform:plan": PLAN_DIGEST,
    }
    (private,) = got.of_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    assert private.inputs["blockPublicPolicy"] is True
    assert not [r for r in got.resources if "ersioning" in r.type]
    assert got.outputs["bucket"] == "kept-b"
    gcs, protected = _storage_run(_bucket("kept-g", "gcs", "us-central1", persistent=True))
    (made,) = gcs.of_type(GCS_BUCKET)
    assert made.inputs["location"] == "US-CENTRAL1" and made.inputs["forceDestroy"] is False
    assert protected["bucket-kept-g"] is True


def test_an_unkept_storage_stack_bucket_is_unprotected_and_destroyed_with_its_objects():
    """A shared `persistent: false` bucket, and the update `storage delete` makes first."""
    got, protected = _storage_run(_bucket("gone-b", "s3", "us-west-2"), keep=False)
    (made,) = got.of_type(AWS_BUCKET)
    assert made.inputs["forceDestroy"] is True and not any(protected.values())
    gcs, protected = _storage_run(_bucket("gone-g", "gcs", "europe-west4"), keep=False)
    (made,) = gcs.of_type(GCS_BUCKET)
    assert made.inputs["forceDestroy"] is True and not any(protected.values())
    assert made.inputs["labels"]["skyform-clusters"] == "c1"
    assert made.inputs["versioning"] == {"enabled": False}
