"""A damaged state is refused, never guessed (issue 26): each corruption below once gave an
internal error or a silent guess (a 0-byte state.db was taken as a fresh state and forgot
every running cluster; one NaN price broke `status` and `plan`). Each is now a refusal
that names the database and how to recover, with exit 1, and leaves it as it was. The SQL
cases run on SQLite and on a real PostgreSQL (tests/pgserver.py)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.migrate import TABLES
from skyform.state.models import ClusterRecord, ClusterStatus

HELLO = "name: hello\nresources: {infra: local}\nrun: echo hello\n"
OFFER = PlacedOffer(
    cloud="local", region="local", zone=None, instance_type="local", spot=False, hourly_price=0.5
)


def _record(name: str) -> ClusterRecord:
    return ClusterRecord(
        name=name,
        status=ClusterStatus.UP,
        spec=ClusterSpec(name=name, offer=OFFER, num_nodes=1),
        hourly_price=0.5,
        launched_at=1.0,
    )


@pytest.fixture
def task(tmp_path: Path) -> Path:
    path = tmp_path / "hello.yaml"
    path.write_text(HELLO)
    return path


class Store:
    """The state database as a tool other than skyform sees it: raw SQL, and a snapshot
    to prove a refused command changed nothing."""

    def __init__(self, backend: str, home: Path) -> None:
        self.backend, self.file = backend, home / "state.db"
        self.url = os.environ.get("SKYFORM_STATE_URL", "")

    @property
    def named(self) -> str:
        """How skyform's messages name the database."""
        return self.url if self.backend == "postgresql" else str(self.file)

    def run(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple]:
        if self.backend == "postgresql":
            import psycopg

            with psycopg.connect(self.url, autocommit=True) as conn:
                cur = conn.execute(sql.replace("?", "%s"), args)
                return cur.fetchall() if cur.description else []
        conn = sqlite3.connect(self.file)
        try:
            rows = conn.execute(sql, args).fetchall()
            conn.commit()
            return rows
        finally:
            conn.close()

    def snapshot(self) -> object:
        if self.backend == "sqlite":
            return hashlib.sha256(self.file.read_bytes()).hexdigest()
        return {
            table: sorted(map(repr, self.run(f"SELECT * FROM {table}")))
            for table in (*TABLES, "meta")
            if table != "jobs" or self.run("SELECT to_regclass('jobs')")[0][0]
        }


@pytest.fixture
def store(backend: str, skyform_home: Path) -> Store:
    """A state holding one UP cluster `hello` with its usage, as an apply leaves it."""
    with open_state() as db:
        record = _record("hello")
        db.put_cluster(record)
        db.open_usage(record, reason="apply")
    return Store(backend, skyform_home)


def _edit_record(store: Store, change: Callable[[dict], None]) -> None:
    ((text,),) = store.run("SELECT record FROM clusters WHERE name='hello'")
    record = json.loads(text)
    change(record)
    store.run("UPDATE clusters SET record=? WHERE name='hello'", (json.dumps(record),))


def _nan_price(record: dict) -> None:
    record["hourly_price"] = float("nan")  # json.dumps writes NaN, as a buggy writer would


NUMERIC_NAN = {
    "sqlite": "UPDATE usage SET hourly_price='NaN'",  # SQLite keeps it as text
    "postgresql": "UPDATE usage SET hourly_price='NaN'::float8",  # PostgreSQL as a NaN
}

CASES: dict[str, tuple[Callable[[Store], None], list[str], str]] = {
    # name: (corrupt, verbs, what the refusal says)
    "schema version as text": (
        lambda s: s.run("UPDATE meta SET value='six' WHERE key='schema_version'"),
        ["status", "plan", "launch", "down", "cost-report"],
        "is damaged: its schema_version (table meta) is 'six', not a whole number >= 1",
    ),
    "negative schema version": (
        lambda s: s.run("UPDATE meta SET value='-1' WHERE key='schema_version'"),
        ["status", "plan", "launch", "down", "cost-report"],
        "is damaged: its schema_version (table meta) is '-1', not a whole number >= 1",
    ),
    "a missing table": (
        lambda s: s.run("DROP TABLE jobs"),
        ["status", "plan", "launch", "down", "cost-report"],
        "is damaged: table jobs missing",
    ),
    "serial as text": (
        lambda s: s.run("UPDATE meta SET value='x' WHERE key='serial'"),
        ["plan", "launch", "down"],
        "is damaged: its serial (table meta) is 'x', not a whole number >= 0",
    ),
    "NaN price in a cluster record": (
        lambda s: _edit_record(s, _nan_price),
        ["status", "plan", "launch", "down"],
        "the state record of cluster 'hello' is damaged: hourly_price is NaN, not a number",
    ),
    "NaN in a numeric column": (
        lambda s: s.run(NUMERIC_NAN[s.backend]),
        ["cost-report"],
        "is damaged: table usage, the row id=1: column hourly_price holds ",
    ),
}

VERB_ARGS = {
    "status": lambda task: ["status"],
    "plan": lambda task: ["plan", task],
    "launch": lambda task: ["launch", task, "-y"],
    "down": lambda task: ["down", "-y", "hello"],
    "cost-report": lambda task: ["cost-report"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_state_is_refused_by_every_verb_and_left_as_it_was(cli, store, task, case):
    corrupt, verbs, said = CASES[case]
    corrupt(store)
    before = store.snapshot()
    for verb in verbs:
        result = cli(*VERB_ARGS[verb](task))
        assert result.exit_code == 1, (verb, result.output)
        assert said in result.stderr, (verb, result.stderr)
        assert store.named in result.stderr, (verb, result.stderr)
        assert "skyform changed nothing. Restore" in result.stderr, (verb, result.stderr)
        assert "internal error" not in result.output, verb
    assert store.snapshot() == before


def test_text_in_a_numeric_column_is_refused_naming_table_row_and_column(cli, skyform_home):
    with open_state() as db:
        db.open_usage(_record("hello"), reason="apply")
    store = Store("sqlite", skyform_home)
    store.run("UPDATE usage SET started_at='yesterday'")
    before = store.snapshot()
    result = cli("cost-report")
    assert result.exit_code == 1
    assert (
        f"the state database {store.file} is damaged: table usage, the row id=1: column "
        "started_at holds 'yesterday', not a finite number" in result.stderr
    )
    assert store.snapshot() == before


# -- the state file itself (SQLite) --------------------------------------------------------


def test_an_empty_state_file_is_refused_not_taken_as_a_fresh_state(cli, task, skyform_home):
    state = skyform_home / "state.db"
    state.touch()
    for args in (["status"], ["plan", task], ["launch", task, "-y"], ["down", "-a", "-y"]):
        result = cli(*args)
        assert result.exit_code == 1, (args, result.output)
        assert f"the state file {state} is empty (0 bytes)" in result.stderr, args
        assert "restore it from a backup" in result.stderr
    assert state.stat().st_size == 0
    assert sorted(p.name for p in skyform_home.iterdir()) == ["state.db"]


def test_a_state_file_that_is_a_symlink_loop_is_refused(cli, task, skyform_home):
    state = skyform_home / "state.db"
    state.symlink_to(skyform_home / "other.db")
    (skyform_home / "other.db").symlink_to(state)
    for args in (["status"], ["plan", task], ["launch", task, "-y"]):
        result = cli(*args)
        assert result.exit_code == 1, (args, result.output)
        assert f"the state file {state} is a symbolic link loop" in result.stderr, args
    assert os.readlink(state) == str(skyform_home / "other.db")
    assert sorted(p.name for p in skyform_home.iterdir()) == ["other.db", "state.db"]


def test_a_state_file_linked_to_nothing_does_not_start_a_new_state(
    cli, task, tmp_path, skyform_home
):
    """A link to a disk that is not mounted: a new state there would forget every cluster."""
    state = skyform_home / "state.db"
    state.symlink_to(tmp_path / "unmounted" / "state.db")
    result = cli("status")
    assert result.exit_code == 1
    assert "is a symbolic link to" in result.stderr and "which does not exist" in result.stderr
    assert cli("launch", task, "-y").exit_code == 1
    assert not (tmp_path / "unmounted").exists()


@pytest.mark.parametrize("name", ["Bad_Name", "../escape"])
def test_down_purge_removes_a_damaged_record_even_with_a_name_no_cluster_has(
    cli, skyform_home, name
):
    with open_state() as db:
        db.put_cluster(_record("hello"))
    store = Store("sqlite", skyform_home)
    store.run(
        "INSERT INTO clusters (name, status, record, updated_at) VALUES (?, 'UP', ?, 0)",
        (name, '{"name": "' + name + '", "spec": '),
    )
    listed = cli("status")
    assert listed.exit_code == 1 and f"down --purge {name}" in listed.stderr.replace("'", "")
    assert cli("down", "-y", name).exit_code == 1  # without --purge it stays
    purged = cli("down", "--purge", "-y", name)
    assert purged.exit_code == 0, purged.output
    assert "its state record is damaged, so what it made is unknown" in purged.stdout
    assert "purged from state" in purged.stdout
    assert [r["name"] for r in json.loads(cli("status", "--json").stdout)] == ["hello"]


def test_a_column_name_means_one_kind_of_value_in_every_table():
    """Rows are checked by column name (a row does not say its table), so a name that holds
    a number in one table and text in another would refuse a good state."""
    from skyform.state.schema import schema_tables

    seen: dict[str, tuple[str, str]] = {}
    for table, columns in schema_tables().items():
        for column, kind in columns.items():
            first = seen.setdefault(column, (table, kind))
            assert first[1] == kind, f"{column}: {first[1]} in {first[0]}, {kind} in {table}"
