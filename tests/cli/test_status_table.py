"""`status` prints its table as plain lines when it fits (a thousand clusters in milliseconds,
not seconds): the text is exactly what rich's table printed, and a table too wide for the
console is still wrapped by rich."""

from __future__ import annotations

import time

from skyform.cli.render.clusters import STATUS_COLUMNS, render_status, status_table
from skyform.cli.render.console import plain_console
from skyform.cli.render.fasttable import print_table
from skyform.plan.model import ClusterSpec, PlacedOffer
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
