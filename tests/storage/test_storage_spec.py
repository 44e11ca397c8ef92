"""Bucket file mounts: every form SkyPilot accepts parses into a BucketSpec with its rules;
each invalid form is one error at file:line:col naming the field (SkyPilot's Storage rules,
sky/data/storage.py:1105-1310, 2012-2068)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyform.errors import SpecError, UnsupportedError
from skyform.spec import load_task


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """Relative sources start at the current directory (SkyPilot's rule): the task's folder."""
    monkeypatch.chdir(tmp_path)


def _task(tmp_path: Path, mounts: str) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "a.txt").write_text("a")
    (tmp_path / "other").mkdir(exist_ok=True)
    (tmp_path / "other" / "data").mkdir(exist_ok=True)
    path = tmp_path / "task.yaml"
    path.write_text("run: echo hi\nfile_mounts:\n" + mounts)
    return path


def _bucket(tmp_path: Path, mounts: str):
    dag = load_task(_task(tmp_path, mounts))
    (mount,) = dag.tasks[0].file_mounts.values()
    return mount.bucket


def test_plain_uri_is_a_copy_of_an_existing_bucket_prefix(tmp_path):
    b = _bucket(tmp_path, "  /datasets: s3://my-bucket/train/images\n")
    assert (b.name, b.store, b.prefix, b.mode, b.must_exist) == (
        "my-bucket",
        "s3",
        "train/images",
        "COPY",
        True,
    )


@pytest.mark.parametrize(
    ("uri", "store"), [("gs://wiki-data", "gcs"), ("r2://ckpt", "r2"), ("S3://up-case", "s3")]
)
def test_each_scheme_names_its_store(tmp_path, uri, store):
    b = _bucket(tmp_path, f"  /d: {uri}\n")
    assert b.store == store and b.prefix == ""


def test_name_alone_is_a_new_scratch_bucket_mounted_by_default(tmp_path):
    b = _bucket(tmp_path, "  /ckpt:\n    name: my-ckpt\n    store: GCS\n    persistent: false\n")
    assert (b.name, b.store, b.mode, b.persistent, b.must_exist, b.uploads) == (
        "my-ckpt",
        "gcs",
        "MOUNT",
        False,
        False,
        (),
    )


def test_name_and_local_dir_uploads_it(tmp_path):
    b = _bucket(tmp_path, "  /d:\n    name: my-data\n    source: ./data\n    mode: copy\n")
    assert (b.uploads, b.mode, b.persistent) == ((str(tmp_path / "data"),), "COPY", True)


def test_source_uri_with_mount_takes_a_sub_path(tmp_path):
    """SkyPilot refuses sub-path mounts (#9660); skyform mounts them."""
    b = _bucket(tmp_path, "  /d:\n    source: s3://shared/team-a\n    mode: MOUNT\n")
    assert (b.name, b.prefix, b.mode, b.must_exist) == ("shared", "team-a", "MOUNT", True)


def test_mount_cached_preset_and_overrides_become_rclone_flags(tmp_path):
    b = _bucket(
        tmp_path,
        "  /d:\n    name: ckpt-rw\n    mode: MOUNT_CACHED\n    type: MODEL_CHECKPOINT_RO\n"
        "    config:\n      mount_cached:\n        transfers: 4\n        vfs_write_back: 5s\n",
    )
    assert b.read_only is True
    assert b.rclone_flags == (
        "--transfers=4",
        "--vfs-read-chunk-size=32M",
        "--vfs-read-chunk-streams=16",
        "--vfs-write-back=5s",
    )


def test_mount_read_only(tmp_path):
    b = _bucket(
        tmp_path, "  /d:\n    name: ro-b\n    config:\n      mount:\n        read_only: true\n"
    )
    assert b.read_only is True and b.mode == "MOUNT"


def test_list_source_of_files_and_dirs(tmp_path):
    b = _bucket(tmp_path, "  /d:\n    name: lst\n    source: [./data/a.txt, ./other]\n")
    assert b.uploads == (str(tmp_path / "data" / "a.txt"), str(tmp_path / "other"))


# (mounts YAML, line:col, field, message part, unsupported?)
BAD = {
    "name_with_scheme": ("  /d:\n    name: s3://foo\n", "4:11", "name", "is a URI", False),
    "name_too_short": ("  /d:\n    name: ab\n", "4:11", "name", "3 to 63 characters", False),
    "name_upper_case": (
        "  /d:\n    name: MyBucket\n",
        "4:11",
        "name",
        "invalid bucket name",
        False,
    ),
    "name_double_dot": ("  /d:\n    name: a..b\n", "4:11", "name", "contains '..'", False),
    "name_ip_shaped": ("  /d:\n    name: 192.168.1.1\n", "4:11", "name", "IP address", False),
    "name_xn_prefix": ("  /d:\n    name: xn--abc\n", "4:11", "name", "S3 reserves", False),
    "name_s3alias": ("  /d:\n    name: abc-s3alias\n", "4:11", "name", "S3 reserves", False),
    "gcs_name_goog": (
        "  /d:\n    name: goog-data\n    store: gcs\n",
        "4:11",
        "name",
        "may not start with 'goog'",
        False,
    ),
    "name_and_uri_source": (
        "  /d:\n    name: mine\n    source: s3://theirs\n",
        "4:11",
        "name",
        "should not be specified if the source is a remote URI",
        False,
    ),
    "local_source_without_name": (
        "  /d:\n    source: ./data\n",
        "4:13",
        "source",
        "needs 'name:'",
        False,
    ),
    "local_source_trailing_slash": (
        "  /d:\n    name: abc\n    source: ./data/\n",
        "5:13",
        "source",
        "ends with '/'",
        False,
    ),
    "local_source_missing": (
        "  /d:\n    name: abc\n    source: ./nope\n",
        "5:13",
        "source",
        "does not exist",
        False,
    ),
    "local_source_is_a_file": (
        "  /d:\n    name: abc\n    source: ./data/a.txt\n",
        "5:13",
        "source",
        "is a file; a single source must be a directory",
        False,
    ),
    "list_same_basename": (
        "  /d:\n    name: abc\n    source: [./data, ./other/data]\n",
        "5:13",
        "source",
        "have the same name 'data'",
        False,
    ),
    "list_with_uri": (
        "  /d:\n    name: abc\n    source: [./data, s3://x-y-z]\n",
        "5:13",
        "source",
        "holds local paths only",
        False,
    ),
    "empty_list": ("  /d:\n    name: abc\n    source: []\n", "5:13", "source", "is empty", False),
    "unknown_store": (
        "  /d:\n    name: abc\n    store: dropbox\n",
        "5:12",
        "store",
        "unknown store",
        False,
    ),
    "unknown_mode": (
        "  /d:\n    name: abc\n    mode: LINK\n",
        "5:11",
        "mode",
        "unknown mode",
        False,
    ),
    "type_without_cached": (
        "  /d:\n    name: abc\n    type: DATASET_RO\n",
        "5:11",
        "type",
        "is for mode MOUNT_CACHED",
        False,
    ),
    "unknown_type": (
        "  /d:\n    name: abc\n    mode: MOUNT_CACHED\n    type: FAST\n",
        "6:11",
        "type",
        "unknown type 'FAST'",
        False,
    ),
    "mount_config_with_copy": (
        "  /d:\n    name: abc\n    mode: COPY\n    config:\n      mount:\n"
        "        read_only: true\n",
        "8:9",
        "config.mount",
        "is for mode MOUNT, not COPY",
        False,
    ),
    "cached_config_with_mount": (
        "  /d:\n    name: abc\n    config:\n      mount_cached:\n        transfers: 2\n",
        "7:9",
        "config.mount_cached",
        "is for mode MOUNT_CACHED, not MOUNT",
        False,
    ),
    "bad_size": (
        "  /d:\n    name: abc\n    mode: MOUNT_CACHED\n    config:\n      mount_cached:\n"
        "        buffer_size: 64Q\n",
        "8:22",
        "config.mount_cached.buffer_size",
        "invalid size '64Q'",
        False,
    ),
    "bad_duration": (
        "  /d:\n    name: abc\n    mode: MOUNT_CACHED\n    config:\n      mount_cached:\n"
        "        vfs_write_back: 5 seconds\n",
        "8:25",
        "config.mount_cached.vfs_write_back",
        "invalid duration",
        False,
    ),
    "unknown_cached_key": (
        "  /d:\n    name: abc\n    mode: MOUNT_CACHED\n    config:\n      mount_cached:\n"
        "        turbo: true\n",
        "8:9",
        "config.mount_cached.turbo",
        "unknown key 'turbo'",
        False,
    ),
    "store_and_uri_disagree": (
        "  /d:\n    source: gs://wiki\n    store: s3\n",
        "5:12",
        "store",
        "is a gcs bucket but store is s3",
        False,
    ),
    "plain_uri_bad_bucket": ("  /d: s3://A_b\n", "3:7", None, "invalid bucket name", False),
    "plain_uri_no_bucket": ("  /d: s3://\n", "3:7", None, "names no bucket", False),
    "plain_uri_unknown_scheme": ("  /d: ftp://host/x\n", "3:7", None, "unknown bucket URI", False),
    "persistent_not_bool": (
        "  /d:\n    name: abc\n    persistent: 3\n",
        "5:17",
        "persistent",
        "expected true or false",
        False,
    ),
    "azure_store": (
        "  /d:\n    name: abc\n    store: azure\n",
        "5:12",
        "store",
        "does not support azure",
        True,
    ),
    "oci_uri": ("  /d: oci://b@us-sanjose-1\n", "3:7", None, "does not support oci", True),
    "volume_store": (
        "  /d:\n    name: abc\n    store: volume\n",
        "5:12",
        "store",
        "Kubernetes volume",
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_invalid_form_is_one_located_error(tmp_path, cli, name):
    mounts, at, field, message, unsupported = BAD[name]
    path = _task(tmp_path, mounts)
    with pytest.raises(SpecError) as caught:
        load_task(path)
    err = caught.value
    assert message in err.message
    assert f"{err.line}:{err.column}" == at
    assert err.field == "file_mounts['/d']" + (f".{field}" if field else "")
    assert isinstance(err, UnsupportedError) is unsupported
    result = cli("validate", path)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path}:{at}: ")
    assert "Traceback" not in result.stderr


def test_the_table_has_twenty_forms_or_more():
    assert len(BAD) >= 20
