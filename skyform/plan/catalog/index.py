"""The catalog index: every priced offer and the small tables, in one SQLite file read lazily.

Why: parsing the catalog CSVs on every run costs time linear in the catalog's size (a real AWS
table has hundreds of instance types in ~30 regions). The index is built once — by
scripts/build_catalog.py for the bundle, by `skyform catalog refresh` for SKYFORM_HOME — and a
query reads only the B-tree pages of the (cloud, accelerator, count) range it asks for, with
its filters (and, for the optimizer, "cheapest per place") evaluated inside SQLite.

Schema (`INDEX_FORMAT`; a file of another format is rebuilt or refused, never guessed at):
- `offers`, one row per offer, clustered by place — (cloud, accelerator, accelerator_count,
  spot, region, zone) — then price and instance type: the offers of one place in the
  catalog's order. `accelerator` is '' for none; `opt_in` marks AWS Local Zones.
- `places`: every place that has an offer. "The cheapest offer per place that passes these
  filters" (what the optimizer asks) is one index seek per place, reading that place's offers
  cheapest first only until one passes: it costs the number of places, not of offers.
- `vm_accelerators (cloud, name)`: every accelerator name the cloud tables mention (TPU slice
  sizes included), so names resolve without touching offers.
- `egress`, `images`, `k8s_pricing`, `k8s_gpus`, `accelerator_clouds`: the small tables, read
  whole when the catalog is opened (a few hundred rows).
- `meta (key, value)`: `format`, `digest` (the price digest, see load.py), `file_rows` and
  `offer_counts` (JSON), `sources` (sha256 of the refreshed files the index was built from).

Opened read-only and immutable (an index is never changed in place: refresh writes a new file
and renames it), so readers take no locks. Any SQLite error while reading is a CatalogError
naming the file, never a traceback.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skyform.errors import CatalogError

INDEX_FILE = "index.sqlite"
MMAP_BYTES = 1 << 30
INDEX_FORMAT = "skyform-catalog-index/2"
HINT_REBUILD = (
    "Run `skyform catalog refresh` again, or delete SKYFORM_HOME/catalog to fall back to the "
    "bundled catalog; a damaged bundled index means a damaged install (reinstall skyform)."
)

# Columns selected for an offer, in `offer.FIELDS` order up to gpu_memory_gib.
SELECT = (
    "offers.cloud, offers.region, offers.zone, instance_type, offers.spot, price, "
    "offers.accelerator, offers.accelerator_count, vcpus, memory_gib, arch, gpu_memory_gib"
)
ORDER = (
    "price, offers.region, offers.zone, instance_type, offers.spot, offers.accelerator, "
    "offers.accelerator_count"
)
# The primary key: a place (the first six columns), then the order within it.
KEY = "cloud, accelerator, accelerator_count, spot, region, zone, price, instance_type"

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE offers (
    cloud TEXT NOT NULL, accelerator TEXT NOT NULL, accelerator_count REAL NOT NULL,
    price REAL NOT NULL, region TEXT NOT NULL, zone TEXT NOT NULL, instance_type TEXT NOT NULL,
    spot INTEGER NOT NULL, vcpus REAL, memory_gib REAL, arch TEXT NOT NULL,
    gpu_memory_gib REAL, opt_in INTEGER NOT NULL,
    PRIMARY KEY (cloud, accelerator, accelerator_count, spot, region, zone, price, instance_type)
) WITHOUT ROWID;
CREATE TABLE places (cloud TEXT NOT NULL, accelerator TEXT NOT NULL,
    accelerator_count REAL NOT NULL, spot INTEGER NOT NULL, region TEXT NOT NULL,
    zone TEXT NOT NULL,
    PRIMARY KEY (cloud, accelerator, accelerator_count, spot, region, zone)) WITHOUT ROWID;
CREATE TABLE vm_accelerators (cloud TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (cloud, name)) WITHOUT ROWID;
CREATE TABLE egress (cloud TEXT NOT NULL, source_region TEXT NOT NULL,
    destination TEXT NOT NULL, tier_start_gb REAL NOT NULL, tier_end_gb REAL,
    price_per_gb REAL NOT NULL);
CREATE TABLE images (cloud TEXT NOT NULL, tag TEXT NOT NULL, region TEXT NOT NULL,
    image_id TEXT NOT NULL, os TEXT NOT NULL, os_version TEXT NOT NULL,
    creation_date TEXT NOT NULL);
CREATE TABLE k8s_pricing (region TEXT NOT NULL, zone TEXT NOT NULL, per_vcpu REAL NOT NULL,
    per_memory_gib REAL NOT NULL, accelerator TEXT NOT NULL, per_accelerator REAL NOT NULL);
CREATE TABLE k8s_gpus (name TEXT NOT NULL, memory_gib REAL, gke_label TEXT NOT NULL,
    product_label TEXT NOT NULL);
CREATE TABLE accelerator_clouds (name TEXT PRIMARY KEY, clouds TEXT NOT NULL) WITHOUT ROWID;
-- secondary indexes last: index_build creates them once the rows are in
CREATE INDEX offers_by_type ON offers (instance_type, cloud, region, zone);
"""
Clauses = tuple[list[str], list[Any]]  # SQL conditions and their parameters
SMALL_TABLES = {  # table -> its columns, as the NamedTuple each row becomes
    "egress": ("cloud", "source_region", "destination", "tier_start_gb", "tier_end_gb",
               "price_per_gb"),
    "images": ("cloud", "tag", "region", "image_id", "os", "os_version", "creation_date"),
    "k8s_pricing": ("region", "zone", "per_vcpu", "per_memory_gib", "accelerator",
                    "per_accelerator"),
    "k8s_gpus": ("name", "memory_gib", "gke_label", "product_label"),
}  # fmt: skip


def connect_file(path: Path) -> sqlite3.Connection:
    """A read-only, lock-free connection to an index file (CatalogError if it is unusable)."""
    uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        # Map the file instead of copying pages into SQLite's own cache: the OS page cache is
        # then all the cache there is, shared by every skyform process.
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        return conn
    except sqlite3.Error as exc:
        raise CatalogError(f"{path}: cannot open the catalog index: {exc}", HINT_REBUILD) from None


class OfferIndex:
    """Queries over one index database (a file, or built in memory for CSV directories)."""

    def __init__(self, conn: sqlite3.Connection, where: str) -> None:
        self._conn = conn
        self.where = where
        with self._reading():
            self.meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if self.meta.get("format") != INDEX_FORMAT:
            found = self.meta.get("format", "none")
            raise CatalogError(
                f"{where}: catalog index format {found!r}, this skyform reads {INDEX_FORMAT!r}",
                HINT_REBUILD,
            )
        for key in ("digest", "file_rows", "offer_counts"):
            if key not in self.meta:
                raise CatalogError(f"{where}: catalog index lacks {key!r}", HINT_REBUILD)
        counts, rows = self._json("offer_counts"), self._json("file_rows")
        for key, value in (("offer_counts", counts), ("file_rows", rows)):
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(n, int) for k, n in value.items()
            ):
                raise CatalogError(f"{where}: catalog index: bad {key!r}", HINT_REBUILD)
        self.offer_counts: dict[str, int] = counts
        self.clouds = tuple(sorted(self.offer_counts))

    @classmethod
    def open(cls, path: Path) -> OfferIndex:
        """Open and check an index file: its format, and that it is not truncated."""
        if not path.is_file():
            raise CatalogError(f"{path}: catalog index missing", HINT_REBUILD)
        conn = connect_file(path)
        try:
            with _reading_errors(str(path)):
                pages = conn.execute("PRAGMA page_count").fetchone()[0]
                size = conn.execute("PRAGMA page_size").fetchone()[0]
            if pages * size != os.stat(path).st_size:
                raise CatalogError(
                    f"{path}: catalog index is truncated or damaged "
                    f"({os.stat(path).st_size} bytes, {pages} pages of {size})",
                    HINT_REBUILD,
                )
            return cls(conn, str(path))
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        self._conn.close()

    def _json(self, key: str) -> Any:
        try:
            return json.loads(self.meta[key])
        except ValueError:
            raise CatalogError(f"{self.where}: catalog index: bad {key!r}", HINT_REBUILD) from None

    @contextmanager
    def _reading(self) -> Iterator[None]:
        with _reading_errors(self.where):
            yield

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._reading():
            return self._conn.execute(sql, params).fetchall()

    # --- what the catalog reads ----------------------------------------------------------

    @property
    def digest(self) -> str:
        return self.meta["digest"]

    def file_rows(self) -> dict[str, int]:
        return dict(self._json("file_rows"))

    def small_table(self, name: str) -> list[tuple]:
        """Every row of one of the small tables, in its columns' order (SMALL_TABLES)."""
        return self.fetch(f"SELECT {', '.join(SMALL_TABLES[name])} FROM {name} ORDER BY rowid")

    def accelerator_clouds(self) -> dict[str, list[str]]:
        rows = self.fetch("SELECT name, clouds FROM accelerator_clouds ORDER BY name")
        return {name: json.loads(clouds) for name, clouds in rows}

    def vm_accelerators(self, cloud: str) -> list[str]:
        rows = self.fetch("SELECT name FROM vm_accelerators WHERE cloud = ? ORDER BY name", [cloud])
        return [name for (name,) in rows]

    def offers(
        self,
        cloud: str,
        where: OfferFilter,
        *,
        cheapest_per_place: bool = False,
        limit: int | None = None,
    ) -> list[tuple]:
        """Rows (SELECT columns) of `cloud` passing `where`, in the catalog's total order.

        `cheapest_per_place`: only the first row of each place (PLACE) in that order — the one
        the optimizer would keep; every filter must be in `where` for that to be exact.
        """
        place, row = where.sql(cloud)
        if place is None:
            return []
        clauses, params = place[0] + row[0], place[1] + row[1]
        if cheapest_per_place:
            # For each place, its first offer (cheapest, then by instance type) that passes.
            columns = KEY.split(", ")
            first = (
                f"SELECT {KEY} FROM offers AS o WHERE "
                + " AND ".join([*(f"o.{c} = places.{c}" for c in columns[:6]), *row[0]])
                + " ORDER BY price, instance_type LIMIT 1"
            )
            key = ", ".join(f"offers.{c}" for c in columns)
            sql = (
                f"SELECT {SELECT} FROM places JOIN offers ON ({key}) = ({first}) "
                f"WHERE {' AND '.join(f'places.{c}' for c in place[0])} ORDER BY {ORDER}"
            )
            params = row[1] + place[1]
        else:
            sql = f"SELECT {SELECT} FROM offers WHERE {' AND '.join(clauses)} ORDER BY {ORDER}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self.fetch(sql, params)

    def by_instance_type(self, instance_type: str, cloud: str | None = None) -> list[tuple]:
        sql = f"SELECT {SELECT} FROM offers WHERE instance_type = ?"
        params: list[Any] = [instance_type]
        if cloud is not None:
            sql += " AND cloud = ?"
            params.append(cloud)
        return self.fetch(sql + f" ORDER BY price, cloud, {ORDER.removeprefix('price, ')}", params)

    def at(self, cloud: str, region: str, zone: str, instance_type: str) -> list[tuple]:
        """Offers of one instance type in one zone (both kinds, every attached GPU)."""
        sql = (
            f"SELECT {SELECT} FROM offers WHERE instance_type = ? AND cloud = ? AND region = ? "
            "AND zone = ?"
        )
        return self.fetch(sql + f" ORDER BY {ORDER}", [instance_type, cloud, region, zone])

    def distinct(self, cloud: str, column: str, where: str = "", params: Sequence = ()) -> list:
        assert column in ("region", "zone", "accelerator", "accelerator, accelerator_count")
        condition = f"cloud = ? {where}"
        rows = self.fetch(
            f"SELECT DISTINCT {column} FROM offers WHERE {condition} ORDER BY {column}",
            [cloud, *params],
        )
        return [row if len(row) > 1 else row[0] for row in rows]


@contextmanager
def _reading_errors(where: str) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise CatalogError(
            f"{where}: catalog index is unreadable or damaged ({exc})", HINT_REBUILD
        ) from None


@dataclass(frozen=True, slots=True)
class OfferFilter:
    """The row filters of one catalog query, as SQL (see catalog.py for their meaning).
    `cpus` and `memory` are (value, at_least) bounds."""

    accelerator: str | None = None
    count: float | None = None
    min_count: float | None = None
    region: str | None = None
    zone: str | None = None
    context: str | None = None
    instance_type: str | None = None
    spot: bool | None = None
    max_price: float | None = None
    cpus: tuple[float, bool] | None = None
    memory: tuple[float, bool] | None = None
    memory_per_vcpu: float | None = None
    arch: str | None = None

    def sql(self, cloud: str) -> tuple[Clauses | None, Clauses]:
        """(place clauses, row clauses) as (SQL conditions, parameters); the place ones
        (columns of `places`) are None when no row can match."""
        if self.context is not None:
            return None, ([], [])  # priced offers have no context
        place: list[str] = ["cloud = ?"]
        place_params: list[Any] = [cloud]
        if self.accelerator is not None:
            place.append("accelerator = ?")
            place_params.append(self.accelerator)
        elif self.count == 0:
            place.append("accelerator = ''")
        elif (self.count or 0) > 0 or (self.min_count or 0) > 0:
            place.append("accelerator != ''")
        row: list[str] = []
        row_params: list[Any] = []
        for column, value, op, at_place in (
            ("accelerator_count", self.count, "=", True),
            ("accelerator_count", self.min_count, ">=", True),
            ("spot", None if self.spot is None else int(self.spot), "=", True),
            ("region", self.region, "=", True),
            ("zone", self.zone, "=", True),
            ("instance_type", self.instance_type, "=", False),
            ("price", self.max_price, "<=", False),
            ("arch", self.arch, "=", False),
        ):
            if value is not None:
                (place if at_place else row).append(f"{column} {op} ?")
                (place_params if at_place else row_params).append(value)
        for column, bound in (("vcpus", self.cpus), ("memory_gib", self.memory)):
            if bound is not None:
                row.append(f"{column} {'>=' if bound[1] else '='} ?")
                row_params.append(bound[0])
        if self.memory_per_vcpu is not None:
            # the same float arithmetic as `(memory or 0.0) >= ratio * (vcpus or 0)` in Python
            row.append("COALESCE(memory_gib, 0.0) >= ? * COALESCE(vcpus, 0.0)")
            row_params.append(float(self.memory_per_vcpu))
        return (place, place_params), (row, row_params)
