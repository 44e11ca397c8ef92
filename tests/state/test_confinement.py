"""Every path made from a name stays under its root (issue 11 item 1): an edited name can
neither make `apply` write outside SKYFORM_HOME nor make `down` delete anything outside it."""

from __future__ import annotations

import pytest

from skyform.config import confined
from skyform.errors import UnsafePathError
from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.stacks.local import LocalEngine, cluster_dir
from skyform.state.db import open_state
from skyform.state.lock import lock_path


@pytest.mark.parametrize("name", ["..", ".", "", "../x", "a/b", "/etc", "x\0y", " x"])
def test_names_that_are_not_one_plain_component_are_refused(tmp_path, name):
    with pytest.raises(UnsafePathError, match="refusing the name"):
        confined(tmp_path, name)


def test_a_symlink_out_of_the_root_is_refused(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "escape").symlink_to(tmp_path)
    with pytest.raises(UnsafePathError, match="outside"):
        confined(tmp_path / "root", "escape")
    assert confined(tmp_path / "root", "ok") == tmp_path / "root" / "ok"


def test_cluster_dirs_and_locks_are_confined(skyform_home):
    for make in (cluster_dir, lock_path):
        with pytest.raises(UnsafePathError):
            make("../../outside")
    assert not (skyform_home.parent / "outside").exists()


def test_local_engine_creates_nothing_for_an_unsafe_name(skyform_home, tmp_path):
    local = PlacedOffer(
        cloud="local", region="local", zone=None, instance_type="local", spot=False,
        hourly_price=0.0,
    )  # fmt: skip
    with pytest.raises(UnsafePathError):
        LocalEngine().up(ClusterSpec(name="../../escaped", offer=local, num_nodes=1))
    assert not (skyform_home.parent / "escaped").exists()


def test_down_refuses_a_record_whose_name_escapes_and_deletes_nothing(cli, skyform_home, tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text("name: hello\nresources: {infra: local}\nrun: echo hi\n")
    assert cli("apply", task, "-y").exit_code == 0
    db = open_state()
    record = db.require_cluster("hello")
    assert record.handle is not None
    handle = record.handle.model_copy(update={"name": ".."})
    db.delete_cluster("hello")  # as if an edited plan had made it under the name ".."
    db.put_cluster(record.model_copy(update={"name": "..", "handle": handle}))
    db.close()
    before = sorted(str(p) for p in skyform_home.rglob("*"))
    result = cli("down", "..", "-y")
    assert result.exit_code == 1, result.output
    assert "refusing" in result.stderr and "Traceback" not in result.output
    assert sorted(str(p) for p in skyform_home.rglob("*") if "locks" not in str(p)) == [
        p for p in before if "locks" not in p
    ]
    assert (skyform_home / "state.db").exists()
    assert cli("status").exit_code == 0


def test_down_tears_down_only_the_directory_a_node_must_have(cli, skyform_home, tmp_path):
    """A node root edited in state.db to point elsewhere is not what `down` removes."""
    task = tmp_path / "t.yaml"
    task.write_text("name: hello\nresources: {infra: local}\nrun: echo hi\n")
    assert cli("apply", task, "-y").exit_code == 0
    elsewhere = tmp_path / "precious"
    (elsewhere / ".skyform_node").mkdir(parents=True)
    (elsewhere / "keep.txt").write_text("mine")
    db = open_state()
    record = db.require_cluster("hello")
    assert record.handle is not None
    node = record.handle.nodes[0].model_copy(update={"root": str(elsewhere)})
    db.put_cluster(
        record.model_copy(update={"handle": record.handle.model_copy(update={"nodes": [node]})})
    )
    db.close()
    result = cli("down", "hello", "-y")
    assert result.exit_code == 0, result.output
    assert (elsewhere / "keep.txt").read_text() == "mine"
    assert (elsewhere / ".skyform_node").is_dir()
    assert not (skyform_home / "local" / "hello").exists()
