"""State written by another skyform version: records with fields this one does not know are
read leniently; a newer schema, or a newer record that does not fit, is a clear refusal by
every command (both versions named, what to do), never a traceback."""

from __future__ import annotations

import json
import sqlite3

import pytest

from skyform import __version__
from skyform.state.schema import MIGRATIONS, SCHEMA_VERSION

HELLO = "name: hello\nresources: {infra: local}\nrun: echo hello\n"


@pytest.fixture
def applied(cli, tmp_path, monkeypatch):
    """A cluster `hello` on local infra, applied from hello.yaml (cwd = tmp_path)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hello.yaml").write_text(HELLO)
    assert cli("apply", "hello.yaml", "-y").exit_code == 0
    return tmp_path / "hello.yaml"


def _edit(home, table: str, change) -> None:
    conn = sqlite3.connect(home / "state.db")
    for key, text in conn.execute(f"SELECT rowid, record FROM {table}").fetchall():
        record = json.loads(text)
        change(record)
        conn.execute(f"UPDATE {table} SET record=? WHERE rowid=?", (json.dumps(record), key))
    conn.commit()
    conn.close()


def _from_the_future(record: dict) -> None:
    record["record_version"] = 7
    record["stop_after"] = "1h"  # top level
    if "spec" in record:
        record["spec"]["offer"]["carbon_g_per_h"] = 12.5  # nested plan types are lenient too
        record["spec"]["placement_group"] = "pg-1"
        record["handle"]["nodes"][0]["tailscale_ip"] = "100.64.0.1"
        record["handle"]["offer"]["carbon_g_per_h"] = 12.5


def test_records_are_stored_with_their_version(applied, skyform_home):
    conn = sqlite3.connect(skyform_home / "state.db")
    (cluster,) = conn.execute("SELECT record FROM clusters").fetchone()
    (job,) = conn.execute("SELECT record FROM jobs").fetchone()
    assert json.loads(cluster)["record_version"] == 1 == json.loads(job)["record_version"]
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert meta["skyform_version"] == __version__


def test_fields_a_newer_skyform_added_are_ignored_by_every_command(cli, applied, skyform_home):
    _edit(skyform_home, "clusters", _from_the_future)
    _edit(skyform_home, "jobs", _from_the_future)
    status = cli("status")
    assert status.exit_code == 0 and "hello" in status.stdout
    plan = cli("plan", applied)
    assert plan.exit_code == 0 and "No changes." in plan.stdout
    assert cli("queue", "hello").exit_code == 0
    logs = cli("logs", "hello")
    assert logs.exit_code == 0 and "hello" in logs.stdout
    assert cli("cost-report").exit_code == 0
    down = cli("down", "-y", "hello")
    assert down.exit_code == 0, down.output
    assert json.loads(cli("status", "--json").stdout) == []


def test_a_newer_record_that_does_not_fit_names_both_versions(cli, applied, skyform_home):
    def renamed(record: dict) -> None:
        record["record_version"] = 3
        record["price_per_node_hour"] = record.pop("hourly_price")  # a field it needs is gone

    _edit(skyform_home, "clusters", renamed)
    for args in (["status"], ["plan", str(applied)], ["queue", "hello"], ["down", "-y", "hello"]):
        result = cli(*args)
        assert result.exit_code == 1, (args, result.output)
        assert "cluster 'hello' was written by a newer skyform (record version 3" in (result.stderr)
        assert "reads up to 1" in result.stderr and "Upgrade skyform" in result.stderr
        assert "internal error" not in result.output and "Traceback" not in result.output


def test_a_damaged_record_is_a_clear_error(cli, applied, skyform_home):
    conn = sqlite3.connect(skyform_home / "state.db")
    conn.execute('UPDATE jobs SET record=\'{"cluster": "hello", "job_id": \'')
    conn.commit()
    conn.close()
    result = cli("queue", "hello")
    assert result.exit_code == 1
    assert "the state record of job 1 of cluster 'hello' is not valid JSON" in result.stderr


def test_a_newer_schema_is_refused_by_every_command(cli, applied, skyform_home):
    conn = sqlite3.connect(skyform_home / "state.db")
    conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.execute("UPDATE meta SET value='9.9.0' WHERE key='skyform_version'")
    conn.commit()
    conn.close()
    commands = [
        ["status"],
        ["plan", str(applied)],
        ["apply", str(applied), "-y"],
        ["queue", "hello"],
        ["logs", "hello"],
        ["exec", "hello", "echo hi"],
        ["cancel", "hello", "--all"],
        ["down", "-y", "hello"],
        ["jobs", "queue"],
        ["jobs", "launch", str(applied), "-d"],
        ["cost-report"],
    ]
    for args in commands:
        result = cli(*args)
        assert result.exit_code == 1, (args, result.output)
        assert "was written by skyform 9.9.0 (state schema 99)" in result.stderr, args
        assert f"({__version__}) knows state schema {SCHEMA_VERSION} at most" in result.stderr
        assert "Upgrade skyform" in result.stderr
        assert "internal error" not in result.output and "Traceback" not in result.output
    conn = sqlite3.connect(skyform_home / "state.db")
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("99",)


def test_plan_files_stay_strict(tmp_path, cli, applied):
    saved = tmp_path / "p.json"
    assert cli("plan", applied, "--destroy", "-o", saved).exit_code == 0
    data = json.loads(saved.read_text())
    data["tasks"] = data.get("tasks", [])
    data["surprise"] = 1
    saved.write_text(json.dumps(data))
    result = cli("show", saved)
    assert result.exit_code == 1 and "surprise" in result.stderr


def test_managed_job_records_are_read_leniently(cli, tmp_path, monkeypatch, skyform_home):
    import time

    monkeypatch.chdir(tmp_path)
    (tmp_path / "hello.yaml").write_text(HELLO)
    assert cli("jobs", "launch", "hello.yaml", "-d").exit_code == 0
    deadline = time.monotonic() + 60
    while json.loads(cli("jobs", "queue", "--json").stdout)[0]["status"] != "SUCCEEDED":
        assert time.monotonic() < deadline, "the managed job never ended"
        time.sleep(0.3)

    def future(record: dict) -> None:
        _from_the_future(record)
        record["tasks"][0]["offer"]["carbon_g_per_h"] = 12.5
        record["tasks"][0]["preemptions"] = []

    _edit(skyform_home, "managed_jobs", future)
    queue = cli("jobs", "queue", "--json")
    assert queue.exit_code == 0 and json.loads(queue.stdout)[0]["status"] == "SUCCEEDED"
    logs = cli("jobs", "logs", "1", "--no-follow")
    assert logs.exit_code == 0 and "hello" in logs.stdout
    assert cli("cost-report").exit_code == 0


def test_a_schema_2_state_gains_cluster_versions_and_older_plans_for_its_clusters_go_stale(
    cli, applied, skyform_home
):
    """Clusters from before per-cluster versions count as changed at the migration: a plan
    made before it for one of them is refused, not wrongly taken as fresh."""
    applied.write_text(HELLO.replace("echo hello", "echo again"))
    assert cli("plan", applied, "-o", "plan.json").exit_code == 0  # an update of hello
    conn = sqlite3.connect(skyform_home / "state.db")  # as an older skyform left it
    conn.execute("DROP TABLE cluster_versions")
    conn.execute("DROP TABLE buckets")  # schema 4, after it
    for table in ("leases", "secrets", "known_hosts"):  # schema 5
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DROP TABLE managed_inputs")  # schema 6
    conn.execute("DROP TABLE managed_logs")
    conn.execute("DROP TABLE fences")  # schema 7 (and the leases' fence column, gone above)
    for table in ("services", "service_replicas", "service_versions", "service_requests",
                  "service_stats"):  # fmt: skip
        conn.execute(f"DROP TABLE {table}")  # schema 8 (its service_revisions: gone in 9)
    conn.execute("DROP TABLE revisions")  # schema 9: plan_revisions as schema 2 made it
    conn.execute(next(s for s in MIGRATIONS[2] if "CREATE TABLE plan_revisions" in s))
    conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='serial'")
    conn.commit()
    conn.close()
    assert "hello" in cli("status").stdout  # migrated to the current schema
    conn = sqlite3.connect(skyform_home / "state.db")
    versions = dict(conn.execute("SELECT name, serial FROM cluster_versions").fetchall())
    serial = int(conn.execute("SELECT value FROM meta WHERE key='serial'").fetchone()[0])
    conn.close()
    assert versions == {"hello": serial}
    stale = cli("apply", "plan.json")
    assert stale.exit_code == 3 and "cluster hello" in stale.stderr
