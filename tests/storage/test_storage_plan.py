"""Buckets in the plan, read from a real S3 API (moto on loopback): a created bucket is a
resource of the plan with its region; an existing one is read (region, existence) at plan
time; egress from it is priced from its real region; apply refuses a plan whose bucket left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from motoserver import KEYS, make_bucket

from skyform.config import Config, load_config
from skyform.plan.catalog import load_catalog
from skyform.plan.catalog.offer import Location


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """Relative sources start at the current directory (SkyPilot's rule): the task's folder."""
    monkeypatch.chdir(tmp_path)


def _task(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(text)
    return path


def _plan(cli, task: Path, *flags: str) -> tuple[dict, str]:
    out = task.parent / "plan.json"
    result = cli("plan", task, "-o", out, *flags)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), result.stdout


AWS_TASK = """\
name: train
resources: {infra: aws, cpus: 2+}
inputs: {s3://west-data/train: 500}
file_mounts:
  /data: s3://west-data/train
  /ckpt:
    name: my-ckpt
    persistent: false
run: python train.py
"""


def test_existing_bucket_is_read_and_egress_is_priced_from_its_region(cli, s3, tmp_path):
    make_bucket(s3, "west-data", "us-west-2")
    s3.put_object(Bucket="west-data", Key="train/part-0", Body=b"x" * 1000)
    task = _task(tmp_path, AWS_TASK)
    plan, text = _plan(cli, task)
    buckets = {b["name"]: b for b in plan["buckets"]}
    assert buckets["west-data"]["region"] == "us-west-2"
    assert buckets["west-data"]["action"] == "noop"
    assert buckets["west-data"]["created_by_skyform"] is False
    assert 'bucket "west-data" (s3, us-west-2, exists, not skyform\'s)' in text
    assert plan["tasks"][0]["offer"]["region"] == "us-west-2"  # next to the data: free egress
    assert plan["egress"] == []

    elsewhere, text = _plan(cli, task, "--infra", "aws/us-east-1")
    (flow,) = elsewhere["egress"]
    placed = elsewhere["tasks"][0]["offer"]
    catalog = load_catalog(load_config())
    exact = catalog.egress.cost(
        Location("aws", "us-west-2"), Location("aws", placed["region"], placed["zone"]), 500
    )
    assert exact > 0
    assert flow["src_infra"] == "aws/us-west-2" and flow["upper_bound"] is False
    assert flow["cost"] == round(exact, 6)
    assert "Egress: s3://west-data/train → train: 500 GB aws/us-west-2 → aws/us-east-1" in text


def test_created_bucket_is_a_plan_resource_in_the_clusters_region(cli, s3, tmp_path):
    make_bucket(s3, "west-data", "us-west-2")
    plan, text = _plan(cli, _task(tmp_path, AWS_TASK))
    (created,) = [b for b in plan["buckets"] if b["action"] == "create"]
    region = plan["tasks"][0]["offer"]["region"]
    assert (created["name"], created["store"], created["region"]) == ("my-ckpt", "s3", region)
    assert created["persistent"] is False and created["used_by"] == ["train"]
    assert f'+ bucket "my-ckpt" (s3, {region}, deleted at down)' in text


def test_the_plan_holds_no_keys(cli, s3, tmp_path):
    make_bucket(s3, "west-data", "us-west-2")
    plan_file = tmp_path / "plan.json"
    _plan(cli, _task(tmp_path, AWS_TASK))
    data = plan_file.read_text()
    assert KEYS["AWS_SECRET_ACCESS_KEY"] not in data and KEYS["AWS_ACCESS_KEY_ID"] not in data


def test_a_bucket_uri_that_does_not_exist_fails_at_plan_time(cli, s3, tmp_path):
    result = cli("plan", _task(tmp_path, AWS_TASK))
    assert result.exit_code == 1
    assert "file mount /data of train: bucket s3://west-data does not exist" in result.stderr


def test_copy_of_a_new_empty_bucket_fails_at_plan_time(cli, s3, tmp_path):
    task = "resources: {infra: local}\nfile_mounts:\n  ~/d: {name: nothing-here, mode: COPY}\n"
    result = cli("plan", _task(tmp_path, task + "run: ls\n"))
    assert result.exit_code == 1
    assert "COPY of the new, empty bucket s3://nothing-here would copy nothing" in result.stderr


def test_a_name_used_with_two_stores_fails(cli, s3, tmp_path):
    task = (
        "resources: {infra: local}\nfile_mounts:\n  ~/a: {name: same-b, store: s3}\n"
        "  ~/b: {name: same-b, store: r2}\nrun: ls\n"
    )
    result = cli("plan", _task(tmp_path, task))
    assert result.exit_code == 1 and "is used with store" in result.stderr


def test_apply_refuses_when_a_bucket_read_at_plan_time_is_gone(cli, s3, tmp_path):
    make_bucket(s3, "west-data", "us-west-2")
    task = "resources: {infra: local}\nfile_mounts:\n  ~/d: s3://west-data\nrun: ls ~/d\n"
    _plan(cli, _task(tmp_path, task))
    s3.delete_bucket(Bucket="west-data")
    result = cli("apply", tmp_path / "plan.json")
    assert result.exit_code == 3
    assert "bucket s3://west-data existed when the plan was made and is gone" in result.stderr


def test_apply_refuses_when_a_bucket_it_would_create_appeared(cli, s3, tmp_path):
    task = "resources: {infra: local}\nfile_mounts:\n  ~/d: {name: fresh-b}\nrun: ls ~/d\n"
    _plan(cli, _task(tmp_path, task))
    make_bucket(s3, "fresh-b")
    result = cli("apply", tmp_path / "plan.json")
    assert result.exit_code == 3
    assert "bucket s3://fresh-b now exists and skyform did not create it" in result.stderr


def test_a_plan_without_buckets_keeps_its_bytes(cli, tmp_path):
    plan, _ = _plan(cli, _task(tmp_path, "resources: {infra: local}\nrun: echo hi\n"))
    assert "buckets" not in plan
    assert "bucket" not in json.dumps(plan["tasks"][0]["job"])


def test_cost_shows_bucket_egress_per_edge_from_the_buckets_region(cli, s3, tmp_path):
    make_bucket(s3, "west-data", "us-west-2")
    plan, _ = _plan(cli, _task(tmp_path, AWS_TASK), "--infra", "aws/us-east-1")
    (flow,) = plan["egress"]
    result = cli("cost", tmp_path / "plan.json")
    assert result.exit_code == 0, result.output
    line = "Egress: s3://west-data/train → train: 500 GB aws/us-west-2 → aws/us-east-1/"
    assert line in result.stdout and f", ${flow['cost']:,.2f}\n" in result.stdout


def test_an_aws_scratch_bucket_is_left_to_the_clusters_pulumi_stack(cli, s3, tmp_path):
    """apply does not create it with its own client: the cluster's stack registers it (and
    deletes it with the stack); a bucket with uploads is made by apply, before the cluster."""
    from skyform.plan.planfile import read_plan
    from skyform.stacks.pulumi.engine import PulumiEngine
    from skyform.state.buckets import list_buckets
    from skyform.state.db import open_state
    from skyform.storage.provision import ensure_buckets

    make_bucket(s3, "west-data", "us-west-2")
    (tmp_path / "up").mkdir()
    (tmp_path / "up" / "a.txt").write_text("a")
    text = AWS_TASK.replace(
        "run:", "  /up:\n    name: up-b\n    source: ./up\n    persistent: false\nrun:"
    )
    _plan(cli, _task(tmp_path, text))
    plan, _ = read_plan(tmp_path / "plan.json")
    db = open_state()
    try:
        ensure_buckets(plan, tmp_path, db, load_config().storage)
        names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        assert "my-ckpt" not in names and "up-b" in names
        assert {b.name: b.stack_owned for b in list_buckets(db)} == {"my-ckpt": True, "up-b": False}
        catalog = load_catalog(Config())
        engine = PulumiEngine(cloud="aws", config=Config(), state=db, catalog=catalog)
        spec = plan.changes[0].after
        inputs = engine.program_inputs(spec)
        assert [b["name"] for b in inputs["buckets"]] == ["my-ckpt"]
    finally:
        db.close()


def test_a_changed_source_makes_a_saved_plan_stale_before_anything_is_made(cli, s3, tmp_path):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "a.txt").write_text("one")
    task = (
        "resources: {infra: local}\nfile_mounts:\n  ~/d: {name: src-b, source: ./ds}\n"
        "  ~/s: {name: scratch-b}\nrun: ls ~/d\n"
    )
    plan, _ = _plan(cli, _task(tmp_path, task))
    buckets = {b["name"]: b for b in plan["buckets"]}
    assert buckets["src-b"]["source_digest"].startswith("sha256:")
    assert "source_digest" not in buckets["scratch-b"]  # nothing uploaded: the bytes as before
    (tmp_path / "ds" / "b.txt").write_text("new file")
    check = cli("plan", tmp_path / "task.yaml", "--check", tmp_path / "plan.json")
    assert check.exit_code == 2
    assert "the local sources uploaded into s3://src-b changed" in check.stdout
    result = cli("apply", tmp_path / "plan.json")
    assert result.exit_code == 3
    assert f"{tmp_path / 'ds'} (uploaded into s3://src-b) changed since the plan was made" in (
        result.stderr
    )
    assert s3.list_buckets()["Buckets"] == []


def test_a_bucket_mounted_twice_with_one_store_given_is_one_bucket(cli, s3, tmp_path):
    """SkyPilot's storage_demo: COPY with `store: s3`, then the same bucket MOUNTed with no
    store, on a task placed on GCP: both mounts use the one S3 bucket, not a new GCS one."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.txt").write_text("x")
    task = (
        "resources: {infra: gcp, cpus: 2+}\nfile_mounts:\n"
        "  /copied: {name: one-b, source: ./data, store: s3, mode: COPY}\n"
        "  /mounted: {name: one-b, mode: MOUNT}\nrun: ls /mounted\n"
    )
    plan, _ = _plan(cli, _task(tmp_path, task))
    assert [(b["store"], b["name"]) for b in plan["buckets"]] == [("s3", "one-b")]
    mounts = plan["tasks"][0]["job"]["file_mounts"]
    stores = {dst: m["bucket"]["store"] for dst, m in mounts.items()}
    assert stores == {"/copied": "s3", "/mounted": "s3"}
