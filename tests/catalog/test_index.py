"""The catalog index: queries answer exactly what the CSV tables define, read only the rows they
need, and a damaged index is a clear error (or, for a refreshed one, rebuilt: test_refresh)."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest

from skyform.config import Config
from skyform.errors import CatalogError
from skyform.plan.catalog import BUNDLED_DIR, Offer, load_catalog
from skyform.plan.catalog.clouds import gcp_offer_rows, plain_offer_rows
from skyform.plan.catalog.index import INDEX_FILE
from skyform.plan.catalog.index_build import parse_hosts
from skyform.plan.catalog.offer import sort_key
from skyform.plan.catalog.tables import parse_vms
from tests.catalog.conftest import bundled_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def from_csv() -> list[Offer]:
    """Every priced offer, straight from the bundled CSVs (no index involved), in total order."""
    aws = parse_vms(bundled_text("aws_vms.csv"), "aws", "aws")
    gcp = parse_vms(bundled_text("gcp_vms.csv"), "gcp", "gcp")
    hosts = parse_hosts("hosts", bundled_text("gcp_accelerator_hosts.csv"))
    rows = plain_offer_rows(aws, "aws") + gcp_offer_rows(gcp, hosts)[0]
    return sorted((Offer(*row) for row in rows), key=sort_key)


QUERIES = [
    {},
    {"accelerator": "A100"},
    {"accelerator": "a100-80gb", "accelerator_count": 8.0},
    {"accelerator": "V100", "accelerator_count": 2.0, "spot": True},
    {"accelerator_count": 0.0, "cpus": 4.0},
    {"accelerator_count": 0.0, "cpus": 8.0, "min_memory_per_vcpu": 4.0, "spot": False},
    {"min_accelerator_count": 4.0},
    {"cloud": "aws", "region": "us-east-1", "max_price": 1.0},
    {"cloud": "gcp", "zone": "us-central1-a", "accelerator": "T4"},
    {"instance_type": "p4d.24xlarge"},
    {"accelerator": "tpu-v5p-8"},
    {"cpus": 96.0, "memory": 680.0},
]


def _reference(offers: list[Offer], q: dict) -> list[Offer]:
    """The query conventions of catalog.py, written out plainly over every offer."""
    clouds = {q["cloud"]} if "cloud" in q else {"aws", "gcp"}
    acc, count = q.get("accelerator"), q.get("accelerator_count")
    found = []
    for o in offers:
        if o.cloud not in clouds or (acc and (o.accelerator or "").upper() != acc.upper()):
            continue
        if count is not None and o.accelerator_count != count:
            continue
        if o.accelerator_count < q.get("min_accelerator_count", 0.0):
            continue
        if any(q.get(k) not in (None, getattr(o, k)) for k in ("region", "zone", "spot")):
            continue
        if q.get("instance_type") not in (None, o.instance_type):
            continue
        if "max_price" in q and o.hourly_price > q["max_price"]:
            continue
        if "cpus" in q and (o.vcpus is None or o.vcpus < q["cpus"]):
            continue
        if "memory" in q and (o.memory_gib is None or o.memory_gib < q["memory"]):
            continue
        ratio = q.get("min_memory_per_vcpu")
        if ratio is not None and (o.memory_gib or 0.0) < ratio * (o.vcpus or 0):
            continue
        found.append(o)
    return found


@pytest.mark.parametrize("q", QUERIES, ids=[str(q) for q in QUERIES])
def test_every_query_returns_what_the_tables_define_in_the_total_order(bundled, from_csv, q):
    assert bundled.query(**q) == _reference(from_csv, q)


@pytest.mark.parametrize("q", QUERIES, ids=[str(q) for q in QUERIES])
def test_cheapest_per_place_keeps_exactly_the_first_offer_of_each_place(bundled, q):
    everything = bundled.query(**q)
    first: dict[tuple, Offer] = {}
    for o in everything:
        first.setdefault((o.cloud, o.region, o.zone, o.accelerator, o.accelerator_count, o.spot), o)
    assert bundled.query(**q, cheapest_per_place=True) == list(first.values())


def test_limit_and_lookups_by_id(bundled, from_csv):
    assert (
        bundled.query(accelerator="H100", limit=3)
        == _reference(from_csv, {"accelerator": "H100"})[:3]
    )
    for offer in itertools.islice(from_csv, 0, None, 997):  # ~20 offers of every kind
        assert bundled.offer(offer.id) == offer
    assert bundled.offer("aws/us-east-1/use1-az4/no-such.type/ondemand") is None
    assert bundled.offer_count() == len(from_csv) + 1  # and this machine's `local` offer


def _query_plan(bundled, monkeypatch, **query) -> str:
    """SQLite's plan for the statement `bundled.query(**query)` runs."""
    index = bundled._index
    issued: list[tuple] = []
    fetch = index.fetch
    monkeypatch.setattr(index, "fetch", lambda sql, params=(): issued.append((sql, params)) or [])
    bundled.query(**query)
    monkeypatch.setattr(index, "fetch", fetch)
    (sql, params), *_ = issued
    return " | ".join(str(row[-1]) for row in index.fetch(f"EXPLAIN QUERY PLAN {sql}", params))


def test_the_optimizers_queries_cost_one_seek_per_place_not_a_scan(bundled, monkeypatch):
    """What the optimizer asks — the cheapest offer per place passing its filters — reads each
    place's offers cheapest first only until one passes: its cost follows the number of places,
    not the catalog's size."""
    for query in (
        {"cloud": "gcp", "accelerator": "A100", "accelerator_count": 8.0, "spot": False},
        {"cloud": "aws", "accelerator_count": 0.0, "cpus": 4.0, "min_memory_per_vcpu": 4.0},
    ):
        plan = _query_plan(bundled, monkeypatch, **query, arch="x86_64", cheapest_per_place=True)
        assert "SEARCH places USING PRIMARY KEY (cloud=? AND accelerator=?" in plan, query
        per_place = "accelerator_count=? AND spot=? AND region=? AND zone=?)"
        assert f"SEARCH o USING PRIMARY KEY (cloud=? AND accelerator=? AND {per_place}" in plan
        assert "SCAN" not in plan


def test_other_queries_read_one_range_or_the_instance_type_index(bundled, monkeypatch):
    plan = _query_plan(bundled, monkeypatch, cloud="gcp", accelerator="T4")
    assert "SEARCH offers USING PRIMARY KEY (cloud=? AND accelerator=?)" in plan
    plan = _query_plan(bundled, monkeypatch, cloud="aws", instance_type="p4d.24xlarge")
    assert "USING INDEX offers_by_type" in plan and "SCAN" not in plan


def _copy_with_index(tmp_path: Path) -> Path:
    out = tmp_path / "catalog"
    shutil.copytree(BUNDLED_DIR, out)
    return out


@pytest.mark.parametrize("damage", ["empty", "not_sqlite", "truncated", "second_half_wiped"])
def test_a_damaged_directory_index_is_a_clear_error(tmp_path, damage):
    directory = _copy_with_index(tmp_path)
    index = directory / INDEX_FILE
    data = index.read_bytes()
    half = len(data) // 2 // 4096 * 4096
    index.write_bytes(
        {
            "empty": b"",
            "not_sqlite": b"x" * 8192,
            "truncated": data[:8192],
            "second_half_wiped": data[:half] + bytes(len(data) - half),  # same size
        }[damage]
    )
    with pytest.raises(CatalogError, match="catalog index") as err:
        load_catalog(Config(), source=directory).query(cloud="gcp")
    assert str(index) in err.value.message and err.value.hint


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("offer_counts", "[1, 2]", "bad 'offer_counts'"),
        ("file_rows", '{"aws_vms": "many"}', "bad 'file_rows'"),
        ("format", "other/9", "catalog index format 'other/9', this skyform reads"),
    ],
)
def test_an_index_with_unexpected_contents_is_refused_at_load(tmp_path, key, value, message):
    import sqlite3

    directory = _copy_with_index(tmp_path)
    conn = sqlite3.connect(directory / INDEX_FILE)
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    conn.commit()
    conn.close()
    with pytest.raises(CatalogError, match=message):
        load_catalog(Config(), source=directory)


def test_cli_reprice_with_a_damaged_catalog_says_so_without_a_traceback(tmp_path, cli):
    plan_file = tmp_path / "plan.json"
    assert cli("plan", EXAMPLES / "pipeline.yaml", "-o", plan_file).exit_code == 0
    directory = _copy_with_index(tmp_path)
    (directory / INDEX_FILE).write_bytes(b"not an index")
    result = cli("cost", "reprice", plan_file, "--catalog", directory)
    assert result.exit_code == 1
    assert "catalog index" in result.stderr and "Traceback" not in result.output


def test_a_directory_without_an_index_is_indexed_in_memory(catalog_copy, bundled):
    plain = load_catalog(Config(), source=catalog_copy)
    assert not (catalog_copy / INDEX_FILE).exists()
    assert plain.query(accelerator="A100", accelerator_count=8.0) == bundled.query(
        accelerator="A100", accelerator_count=8.0
    )
