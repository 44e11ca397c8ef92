"""`status` prints its table as plain lines when it fits (a thousand clusters in milliseconds,
not seconds): the text is exactly what rich's table printed, and a table too wide for the
console is still wrapped by rich."""

from __future__ import annotations

import gc
import time

import pytest

from skyform.cli.render.clusters import render_status
from skyform.cli.render.console import plain_console
from skyform.cli.render.fasttable import print_table
from skyform.cli.render.status_table import STATUS_COLUMNS, status_table
from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.models import ClusterRecord, ClusterStatus

ROWS = [
    ("c1", "local", "1x local", "UP", "-", "just now", "$0.00/h"),
    (
        "名前-gpu",
        "aws/us-east-1",
        "2x p4d.24xlarge [Spot] (96 vCPU, 1152 GB, A100:8)",
        "INIT",
        "10m",
        "3 days ago",
        "$12.3456/h",
    ),
    ("[b]x[/b]", "ssh/lab", "1x host", "STOPPED", "1h (down)", "1 hr ago", "$1.50/h"),
]


def _by_rich(rows, width: int) -> str:
    console = plain_console(width)
    console.print(status_table(rows))
    return console.file.getvalue()


def test_the_plain_table_is_the_text_rich_printed():
    for rows in (ROWS, ROWS[:1], ROWS[2:]):
        console = plain_console(200)
        assert print_table(console, STATUS_COLUMNS, rows)
        assert console.file.getvalue() == _by_rich(rows, 200)


def test_a_table_wider_than_the_console_is_left_to_rich():
    assert not print_table(plain_console(60), STATUS_COLUMNS, ROWS)


def test_status_with_a_thousand_clusters_renders_fast(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    local = {"cloud": "local", "region": "local", "zone": None, "instance_type": "local"}
    offer = PlacedOffer(**local, spot=False, hourly_price=0.0)
    records = [
        ClusterRecord(
            name=f"c{i:04d}",
            status=ClusterStatus.UP,
            hourly_price=0.0,
            spec=ClusterSpec(name=f"c{i:04d}", offer=offer, num_nodes=1),
            launched_at=time.time(),
        )
        for i in range(1000)
    ]
    started = time.perf_counter()
    render_status(records, {}, {}, verbose=False, as_json=False)
    took = time.perf_counter() - started
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1002 and lines[-1].split()[:5] == ["c0999", "local", "1x", "local", "UP"]
    assert took < 0.5, f"{took:.3f} s"  # rich's table took 2-3 s


def _records() -> list[ClusterRecord]:
    aws = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4"}
    gpus = {"accelerator": "A100", "accelerator_count": 8, "vcpus": 96, "memory_gib": 1152}
    gpu = PlacedOffer(**aws, **gpus, instance_type="p4d.24xlarge", spot=True, hourly_price=12.3)
    lab = PlacedOffer(
        cloud="ssh", context="lab", region="west", zone="west", instance_type="host",
        spot=False, hourly_price=0.0,
    )  # fmt: skip
    made = [("gpu-名前", gpu, 2, ClusterStatus.INIT), ("[b]x[/b]", lab, 1, ClusterStatus.STOPPED)]
    return [
        ClusterRecord(
            name=name,
            status=status,
            hourly_price=offer.hourly_price,
            spec=ClusterSpec(name=name, offer=offer, num_nodes=nodes),
            launched_at=time.time() - 3 * 86400,
        )
        for name, offer, nodes, status in made
    ]


@pytest.mark.parametrize("columns", ["200", "60"])  # 60: too wide, rich wraps RESOURCES
def test_status_read_without_the_models_prints_what_the_models_print(
    columns, cli, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", columns)
    assert cli("status").stdout == "No existing clusters.\n"  # a store without clusters
    with open_state() as db:
        for r in _records():
            db.put_cluster(r)
        rows = db.cluster_rows()
        records = db.list_clusters()
    assert rows is not None and [r.name for r in rows] == sorted(r.name for r in _records())
    render_status(records, {}, {}, verbose=False, as_json=False)
    by_models = capsys.readouterr().out
    assert columns == "60" or ("A100:8" in by_models and "ssh/lab/west" in by_models)
    assert cli("status").stdout == by_models
    assert gc.isenabled()  # paused while status read and drew the rows, and only then


def test_a_record_the_plain_reader_does_not_take_is_read_by_the_models(cli, capsys):
    with open_state() as db:
        for r in _records():
            db.put_cluster(r)
        with db.transaction() as conn:  # what pydantic would coerce: a number as a string
            text = conn.execute("SELECT record FROM clusters WHERE name='[b]x[/b]'").fetchone()
            conn.execute(
                "UPDATE clusters SET record=? WHERE name='[b]x[/b]'",
                (text["record"].replace('"num_nodes": 1', '"num_nodes": "3"'),),
            )
        assert db.cluster_rows() is None
        records = db.list_clusters()
    assert records[0].spec.num_nodes == 3
    render_status(records, {}, {}, verbose=False, as_json=False)
    by_models = capsys.readouterr().out
    assert cli("status").stdout == by_models and "3x host" in by_models
