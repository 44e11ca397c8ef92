"""gs:// buckets on the local infra against a real GCS JSON API (gcp-storage-emulator on
loopback, reached through STORAGE_EMULATOR_HOST): COPY of a prefix, MOUNT read and write,
a local directory uploaded into a new bucket that `down` deletes."""

from __future__ import annotations

import pytest
from e2ekit import task_file
from gcsemulator import blob_names
from motoserver import can_fuse

pytestmark = pytest.mark.e2e
needs_fuse = pytest.mark.skipif(can_fuse() is not None, reason=f"FUSE cannot mount: {can_fuse()}")


def _lines(output: str) -> list[str]:
    return [line.split(") ", 1)[1] for line in output.splitlines() if "node=0) " in line]


def _put(gcs, bucket: str, blobs: dict[str, bytes]) -> None:
    made = gcs.create_bucket(bucket)
    for name, body in blobs.items():
        made.blob(name).upload_from_string(body)


def test_copy_of_a_gcs_prefix(sky, gcs, tmp_path):
    _put(gcs, "gcs-data", {"train/a.txt": b"a\n", "train/sub/b.txt": b"b\n", "other/x": b"x"})
    task = task_file(
        tmp_path,
        "copy.yaml",
        "name: gcopy\nresources: {infra: local}\nfile_mounts:\n  ~/data: gs://gcs-data/train\n"
        'run: |\n  find ~/data -type f | sort | sed "s|$HOME/data/||"\n  cat ~/data/sub/b.txt\n',
    )
    plan = sky("plan", task, "-o", "plan.json", check=0)
    assert 'bucket "gcs-data" (gcs, us, exists, not skyform\'s)' in plan.stdout
    applied = sky("apply", "plan.json", timeout=300, check=0)
    assert _lines(applied.stdout)[:3] == ["a.txt", "sub/b.txt", "b"]
    sky("down", "-y", "gcopy", check=0)
    assert gcs.lookup_bucket("gcs-data") is not None  # not skyform's: kept


@needs_fuse
def test_mount_of_a_gcs_bucket_reads_and_writes(sky, gcs, tmp_path):
    _put(gcs, "gcs-shared", {"team/in.txt": b"from gcs\n"})
    task = task_file(
        tmp_path,
        "mount.yaml",
        "name: gmnt\nresources: {infra: local}\nfile_mounts:\n"
        "  ~/in:\n    source: gs://gcs-shared/team\n    mode: MOUNT\n"
        "run: |\n  cat ~/in/in.txt\n  echo written > ~/in/out.txt\n  echo done\n",
    )
    applied = sky("apply", task, "-y", timeout=300, check=0)
    assert _lines(applied.stdout)[:2] == ["from gcs", "done"]
    assert blob_names(gcs, "gcs-shared") == ["team/in.txt", "team/out.txt"]
    assert gcs.bucket("gcs-shared").blob("team/out.txt").download_as_bytes() == b"written\n"
    sky("down", "-y", "gmnt", check=0)


def test_local_dir_uploaded_into_a_new_gcs_bucket_deleted_at_down(sky, gcs, tmp_path):
    src = tmp_path / "ds"
    (src / "sub").mkdir(parents=True)
    (src / "one.txt").write_text("one")
    (src / "sub" / "two.txt").write_text("two")
    task = task_file(
        tmp_path,
        "up.yaml",
        "name: gup\nresources: {infra: local}\nfile_mounts:\n"
        "  ~/d:\n    name: gcs-up\n    source: ./ds\n    store: gcs\n    mode: COPY\n"
        "    persistent: false\n"
        'run: find ~/d -type f | sort | sed "s|$HOME/d/||"\n',
    )
    plan = sky("plan", task, check=0)
    shown = '+ bucket "gcs-up" (gcs, us-central1, deleted at down): uploads '
    assert shown + str(task.parent / "ds") in plan.stdout  # recorded absolute
    applied = sky("apply", task, "-y", timeout=300, check=0)
    assert blob_names(gcs, "gcs-up") == ["one.txt", "sub/two.txt"]
    assert _lines(applied.stdout)[:2] == ["one.txt", "sub/two.txt"]
    down = sky("down", "-y", "gup", check=0)
    assert "bucket gs://gcs-up deleted" in down.stdout
    assert gcs.lookup_bucket("gcs-up") is None


def test_ssh_nodes_copy_a_gcs_prefix(sky, gcs, pool, tmp_path):
    _put(gcs, "gcs-lab", {"x/a.txt": b"gcs on the node\n"})
    task = task_file(
        tmp_path,
        "ssh.yaml",
        "name: glab\nnum_nodes: 2\nresources: {infra: ssh/lab}\nfile_mounts:\n"
        "  ~/data: gs://gcs-lab/x\nrun: cat ~/data/a.txt\n",
    )
    applied = sky("apply", task, "-y", timeout=300, check=0)
    assert applied.stdout.count("gcs on the node") == 2
    sky("down", "-y", "glab", check=0)
