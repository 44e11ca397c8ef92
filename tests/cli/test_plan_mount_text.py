"""A bucket mount reads in the plan as the task file wrote it (its URI, and what is uploaded
into it), not as the canonical JSON the plan keeps for the job's digest."""

from __future__ import annotations

MOUNTS = """\
name: b
resources: {infra: local}
file_mounts:
  ~/ckpt:
    name: my-ckpt
    store: s3
    mode: MOUNT
  ~/data:
    name: my-data
    store: s3
    source: wd
    mode: COPY
  ~/code: wd
run: echo hi
"""


def test_bucket_mounts_read_as_uris_in_the_plan(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wd").mkdir()
    (tmp_path / "b.yaml").write_text(MOUNTS)
    result = cli("plan", "b.yaml")
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if "file_mounts" in x)
    wd = tmp_path / "wd"  # relative sources start at the current directory, recorded absolute
    assert line.split("= ", 1)[1] == (
        f"~/ckpt <- s3://my-ckpt (MOUNT), ~/code <- {wd}, "
        f"~/data <- s3://my-data (uploaded from {wd}) (COPY)"
    )
    assert '{"bucket"' not in result.stdout
