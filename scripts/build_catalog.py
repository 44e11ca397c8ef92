#!/usr/bin/env python3
"""Build skyform/plan/data/ (the bundled price catalog) from ../shared/catalog.

Every row of every catalog CSV is kept: each file is stored gzip-compressed byte for byte (no
timestamp or file name in the gzip header, so the output bytes are the same on every run), and
manifest.json lists each file with the sha256 and size of the original and its row count.

    python scripts/build_catalog.py            # (re)write skyform/plan/data
    python scripts/build_catalog.py --check    # exit 1 if skyform/plan/data is out of date
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
DEFAULT_SOURCE = REPO.parent / "shared" / "catalog"
DEFAULT_OUT = REPO / "skyform" / "plan" / "data"
TABLES = (
    "accelerators.csv",
    "aws_vms.csv",
    "egress.csv",
    "gcp_accelerator_hosts.csv",
    "gcp_vms.csv",
    "images.csv",
    "k8s_gpu_labels.csv",
    "k8s_pricing_default.csv",
)


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
    for name in TABLES:
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


def write(out_dir: Path, files: dict[str, bytes]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out_dir / name)
    for stale in out_dir.iterdir():
        if stale.is_file() and stale.name not in files:
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
        extra = [p.name for p in args.out.iterdir() if p.is_file() and p.name not in files]
        if stale or extra:
            sys.stderr.write(f"out of date: {', '.join(stale + extra)}\n")
            return 1
        return 0
    write(args.out, files)
    total = sum(len(d) for d in files.values())
    sys.stdout.write(f"wrote {len(files)} files, {total} bytes, to {args.out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
