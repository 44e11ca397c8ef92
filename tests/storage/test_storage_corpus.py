"""Every SkyPilot example in the compat corpus that uses buckets plans with each bucket's region
known (s3 read from moto, gcs from the GCS emulator; without a readable store the plan says
why in a note), or fails with one located error, for the corpus files SkyPilot itself would
refuse: an empty bucket name, a missing local source."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from helpers import CORPUS_FILES, corpus_checkout, needs_corpus
from motoserver import make_bucket

from skyform.errors import SkyformError, SpecError
from skyform.plan.buckets import bucket_uses
from skyform.spec import load_task
from skyform.spec.inputs import TaskInputs

FILES = CORPUS_FILES
BUCKETY = [
    p for p in FILES if re.search(r"s3://|gs://|r2://|\bstore:|mode: *(MOUNT|COPY)", p.read_text())
]


def _load(path: Path):
    """Load with placeholders for the variables the file leaves null (as a user gives them)."""
    given: dict[str, list[str]] = {"envs": [], "secrets": []}
    for _ in range(10):
        try:
            return load_task(path, TaskInputs(**given)), given
        except SpecError as err:
            found = re.search(r"(environment variable|secret) '(\w+)' has no value", err.message)
            if not found:
                raise
            kind = "envs" if found.group(1) != "secret" else "secrets"
            given[kind].append(f"{found.group(2)}=fill-{found.group(2).lower().replace('_', '-')}")
    raise AssertionError("too many variables")


@needs_corpus
def test_corpus_bucket_tasks_plan_with_region_or_note(s3, gcs, tmp_path, monkeypatch):
    from skyform.ops.plan import plan_task

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "tasks").mkdir()
    monkeypatch.chdir(tmp_path / "tasks")  # the checkout's root, where its paths start
    planned = refused = unplaced = 0
    for original in BUCKETY:
        path = corpus_checkout(original, tmp_path)
        try:
            dag, envs = _load(path)
        except SpecError as err:
            assert err.line is not None and (err.field or "").startswith(
                ("file_mounts", "resources")
            )
            refused += 1
            continue
        for use in bucket_uses(dag):
            if use.spec.must_exist and use.spec.store == "s3":
                with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
                    make_bucket(s3, use.spec.name, "us-west-2")
            exists = use.spec.store == "gcs" and gcs.lookup_bucket(use.spec.name) is not None
            if use.spec.must_exist and use.spec.store == "gcs" and not exists:
                gcs.create_bucket(use.spec.name)  # the emulator's location: US
        try:
            result = plan_task(path, inputs=TaskInputs(**envs))
        except SkyformError as err:  # e.g. no offer for the task's GPUs in the catalog
            assert "bucket" not in err.message.replace(str(path), ""), (path.name, err.message)
            unplaced += 1
            continue
        planned += 1
        for bucket in result.plan.buckets:  # both stores read (moto, the GCS emulator)
            assert bucket.region and not bucket.note, (path.name, bucket)
    # refused: 3 empty bucket names, local directories to upload that exist only on the
    # author's machine, oci and nebius buckets; unplaced: 5 tasks whose instance types or TPUs
    # the bundled catalog has no offer of
    assert (planned, refused, unplaced) == (23, 10, 5)
