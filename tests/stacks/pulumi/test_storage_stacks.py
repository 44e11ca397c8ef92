"""Buckets on aws/gcp as Pulumi resources, through the Automation API against the recording
stand-in `pulumi`: apply gives a persistent bucket a storage stack of its own (it survives
`down`), `storage delete` lifts its protection and destroys that stack; S3-compatible stores
(an endpoint: MinIO, moto, r2) and local/ssh clusters keep skyform's own client."""

from __future__ import annotations

import json
from pathlib import Path

from skyform.config import Config, load_config
from skyform.plan.planfile import read_plan
from skyform.state.buckets import list_buckets
from skyform.state.db import open_state
from skyform.storage.cleanup import delete_bucket
from skyform.storage.provision import bucket_home, ensure_buckets

TASK = """\
name: train
resources: {infra: aws/us-west-2, cpus: 2+}
file_mounts:
  /ckpt:
    name: kept-ckpt
  /scratch:
    name: scratch-b
    persistent: false
run: python train.py
"""

UP = ["up", "--yes", "--skip-preview", "--color", "never", "--exec-kind", "auto.inline"]


def _plan(cli, tmp_path: Path, text: str = TASK):
    task = tmp_path / "task.yaml"
    task.write_text(text)
    out = tmp_path / "plan.json"
    result = cli("plan", task, "-o", out)
    assert result.exit_code == 0, result.output
    plan, _ = read_plan(out)
    return plan


def test_a_persistent_aws_bucket_is_a_storage_stack_that_down_keeps_and_delete_destroys(
    cli, s3, standin, tmp_path, monkeypatch, skyform_home
):
    plan = _plan(cli, tmp_path)  # planned against moto: neither bucket exists
    buckets = {b.name: b for b in plan.buckets}
    settings = load_config().storage
    # with the store at an endpoint (moto here, MinIO on ssh pools) skyform's client makes them
    assert bucket_home(buckets["kept-ckpt"], plan, settings) == "client"
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # now it is AWS's own S3
    assert bucket_home(buckets["kept-ckpt"], plan, settings) == "storage"
    assert bucket_home(buckets["scratch-b"], plan, settings) == "cluster"

    standin.scenario(resources=[{"type": "aws:s3/bucket:Bucket", "name": "bucket-kept-ckpt",
                                 "outputs": {}}], outputs={"bucket": "kept-ckpt"})  # fmt: skip
    events: list[str] = []
    db = open_state()
    try:
        ensure_buckets(plan, tmp_path, db, settings, events.append, config=Config())
        stacks = standin.stacks()
        assert list(stacks) == ["s3-kept-ckpt"]  # one stack per bucket; the scratch one waits
        up_call = next(c for c in standin.calls() if c["argv"][0] == "up")
        work = skyform_home / "pulumi-work" / "skyform-storage" / "s3-kept-ckpt"
        assert up_call["cwd"] == str(work)
        assert "name: skyform-storage" in (work / "Pulumi.yaml").read_text()
        assert "created bucket s3://kept-ckpt in us-west-2 (Pulumi stack " \
            "skyform-storage/s3-kept-ckpt)" in events  # fmt: skip
        records = {b.name: b for b in list_buckets(db)}
        assert records["kept-ckpt"].storage_stack == "skyform-storage/s3-kept-ckpt"
        assert records["kept-ckpt"].persistent is True
        assert (
            records["scratch-b"].stack_owned is True and records["scratch-b"].storage_stack is None
        )
        assert s3.list_buckets()["Buckets"] == []  # boto3 made nothing

        before = len(standin.calls())
        said = delete_bucket(db, Config(), records["kept-ckpt"])
        commands = [c[:1] if c[0] != "stack" else c[:2] for c in standin.commands()[before:]]
        # select, unprotect (up with keep: false), destroy, remove the stack
        assert ["up"] in commands and ["destroy"] in commands and ["stack", "rm"] in commands
        assert (
            commands.index(["up"]) < commands.index(["destroy"]) < commands.index(["stack", "rm"])
        )
        assert said == "bucket s3://kept-ckpt deleted with its stack skyform-storage/s3-kept-ckpt"
        assert standin.stacks() == {}
        assert "kept-ckpt" not in {b.name for b in list_buckets(db)}
        # a second delete of a stack already gone says so and changes nothing
        again = records["kept-ckpt"]
        assert (
            delete_bucket(db, Config(), again) == "bucket s3://kept-ckpt had no storage stack left"
        )
    finally:
        db.close()


def test_a_local_cluster_keeps_creating_its_buckets_through_the_client(
    cli, s3, tmp_path, monkeypatch
):
    plan = _plan(cli, tmp_path, TASK.replace("aws/us-west-2", "local").replace(" /", " ~/"))
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    settings = load_config().storage
    assert {b.name: bucket_home(b, plan, settings) for b in plan.buckets} == {
        "kept-ckpt": "client",
        "scratch-b": "client",
    }


def test_the_storage_stack_inputs_reach_the_program_as_planned(cli, s3, tmp_path, monkeypatch):
    from skyform.stacks.pulumi.storage import StorageStacks

    plan = _plan(cli, tmp_path)
    kept = next(b for b in plan.buckets if b.name == "kept-ckpt")
    inputs = StorageStacks(Config(), plan_digest="sha256:abc").inputs(kept, keep=True)
    assert json.loads(json.dumps(inputs)) == {
        "cloud": "aws",
        "keep": True,
        "bucket": {
            "name": "kept-ckpt",
            "region": "us-west-2",
            "tags": {"skyform:bucket": "kept-ckpt", "skyform:clusters": "train",
                     "skyform:plan": "sha256:abc"},
        },
    }  # fmt: skip
