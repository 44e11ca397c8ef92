#!/usr/bin/env python3
"""Build skyform/plan/data/ (the bundled price catalog) from ../shared/catalog.

Every row of every catalog CSV is kept: each file is stored gzip-compressed byte for byte (no
timestamp or file name in the gzip header, so the output bytes are the same on every run), and
manifest.json lists each file with the sha256 and size of the original and its row count.
Then `index.sqlite`, the catalog index skyform plans from (skyform/plan/catalog/index.py), is
built from those tables by the same code `skyform catalog refresh` uses.

    python scripts/build_catalog.py            # (re)write skyform/plan/data
    python scripts/build_catalog.py --check    # exit 1 if skyform/plan/data is out of date

`--check` compares the index by content (every table's rows), not by bytes, so another SQLite
version writing the same rows differently does not count as out of date — a change to the code
that derives offers from the tables does.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_SOURCE = REPO.parent / "shared" / "catalog"
DEFAULT_OUT = REPO / "skyform" / "plan" / "data"
INDEX = "index.sqlite"


def bundle_tables() -> tuple[str, ...]:
    """The bundle's CSV files: every catalog table (priced clouds from the infra table)."""
    from skyform.plan.catalog.load import FILES

    return tuple(sorted(bundled for _, bundled in FILES.values()))


def compress(data: bytes) -> bytes:
    """gzip with a fixed header (mtime 0, no name) so the same input gives the same bytes."""
    import io

    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def build(source: Path) -> dict[str, bytes]:
    """File name -> bytes of the bundle to write."""
    out: dict[str, bytes] = {}
    files = {}
    for name in bundle_tables():
        data = (source / name).read_bytes()
        text = data.decode("utf-8")
        files[f"{name}.gz"] = {
            "source": name,
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            "rows": max(text.count("\n") - 1, 0),
        }
        out[f"{name}.gz"] = compress(data)
    manifest = {
        "format": "skypilot-catalog-v8",
        "built_from": "shared/catalog (see its README for sources and commits)",
        "files": files,
    }
    out["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    return out


def build_index(out_dir: Path, target: Path) -> None:
    """Index the tables of `out_dir` (the bundle just written) into `target`."""
    from skyform.plan.catalog.index_build import build_index as write_index
    from skyform.plan.catalog.index_build import parse_sources
    from skyform.plan.catalog.load import read_sources

    write_index(parse_sources(read_sources(out_dir), {}), target).close()


def index_content(path: Path) -> str:
    """sha256 of every row of every table of an index (its content, whatever its bytes)."""
    import sqlite3

    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        sha = hashlib.sha256()
        for line in conn.iterdump():
            sha.update(line.encode() + b"\n")
        return sha.hexdigest()
    finally:
        conn.close()


def write(out_dir: Path, files: dict[str, bytes]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out_dir / name)
    for stale in out_dir.iterdir():
        if stale.is_file() and stale.name not in files and stale.name != INDEX:
            stale.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args(argv)
    files = build(args.source)
    if args.check:
        stale = [
            name
            for name, data in files.items()
            if not (args.out / name).is_file() or (args.out / name).read_bytes() != data
        ]
        known = {*files, INDEX}
        extra = [p.name for p in args.out.iterdir() if p.is_file() and p.name not in known]
        with tempfile.TemporaryDirectory() as tmp:
            write(Path(tmp), files)
            build_index(Path(tmp), Path(tmp) / INDEX)
            current = args.out / INDEX
            if not current.is_file() or index_content(current) != index_content(Path(tmp) / INDEX):
                stale.append(INDEX)
        if stale or extra:
            sys.stderr.write(f"out of date: {', '.join(stale + extra)}\n")
            return 1
        return 0
    write(args.out, files)
    build_index(args.out, args.out / INDEX)
    total = sum(len(d) for d in files.values()) + (args.out / INDEX).stat().st_size
    sys.stdout.write(f"wrote {len(files) + 1} files, {total} bytes, to {args.out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
