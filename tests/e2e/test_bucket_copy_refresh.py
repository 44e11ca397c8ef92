"""A bucket's local source changed: the plan uploads it again and refreshes the COPY on the
nodes that read it (the cluster is `~`), and the summary counts the buckets as buckets."""

from __future__ import annotations

import pytest
from e2ekit import task_file
from motoserver import keys_of

pytestmark = pytest.mark.e2e


def _node_lines(output: str) -> list[str]:
    return [line.split(") ", 1)[1] for line in output.splitlines() if "node=0) " in line]


def test_a_changed_source_refreshes_the_copy_on_the_nodes(sky, s3, tmp_path):
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.txt").write_text(f"{name} v1\n")
    task = task_file(
        tmp_path,
        "refresh.yaml",
        "name: refresh\nresources: {infra: local}\nfile_mounts:\n"
        "  ~/one:\n    name: refresh-one\n    source: ./one\n    mode: COPY\n"
        "  ~/two:\n    name: refresh-two\n    source: ./two\n    mode: COPY\n"
        "run: cat ~/one/a.txt ~/two/a.txt\n",
    )
    first = sky("apply", task, "-y", timeout=300, check=0)
    assert _node_lines(first.stdout)[:2] == ["one v1", "two v1"]
    assert "Buckets: 2 created." in first.stdout

    for name in ("one", "two"):
        (tmp_path / name / "a.txt").write_text(f"{name} v2\n")
    changed = sky("plan", task, "-o", "refresh.json", "--detailed-exitcode", check=2)
    assert '~ cluster "refresh"' in changed.stdout
    assert "COPY refresh: ~/one (s3://refresh-one uploaded again)" in changed.stdout
    assert "~/two (s3://refresh-two uploaded again)" in changed.stdout
    assert (
        "Plan: 0 to add, 1 to change, 0 to destroy. Buckets: 2 to upload again." in changed.stdout
    )
    review = sky("show", "refresh.json", "--markdown", check=0)
    assert "**Plan: 0 to add, 1 to change, 0 to destroy. Buckets: 2 to upload again.**" in (
        review.stdout
    )
    applied = sky("apply", "refresh.json", timeout=300, check=0)
    assert "Clusters: 0 added, 1 changed, 0 destroyed. Buckets: 2 uploaded again." in (
        applied.stdout
    )
    assert "~/one: copy refresh-one" in applied.stdout  # copied to the node again
    assert s3.get_object(Bucket="refresh-one", Key="a.txt")["Body"].read() == b"one v2\n"
    seen = sky("exec", "refresh", "cat ~/one/a.txt ~/two/a.txt", timeout=120, check=0)
    assert _node_lines(seen.stdout)[:2] == ["one v2", "two v2"]  # the nodes see the new data

    again = sky("plan", task, "--detailed-exitcode", check=0)
    assert "COPY refresh" not in again.stdout and "No changes." in again.stdout
    sky("down", "-y", "refresh", check=0)
    assert keys_of(s3, "refresh-two") == ["a.txt"]  # persistent (the default): kept at down
