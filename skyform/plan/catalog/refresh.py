"""`skyform catalog refresh`: fetch SkyPilot's v8 catalog into SKYFORM_HOME/catalog, atomically.

Files are downloaded into a temporary sibling directory, every row of every file is validated
(header, column count, numbers, required values), the catalog index is built from them
(index.py: what plans read), the result must load as a catalog, and only then is the directory
renamed into place. Any failure — HTTP error, truncated body, malformed
row — removes the temporary directory and leaves the previous catalog (refreshed or bundled)
exactly as it was. Files are written 0600, directories 0700.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skyform.digests import sha256_hex
from skyform.errors import CatalogError
from skyform.paths import ensure_dir
from skyform.plan.catalog import tables
from skyform.plan.catalog.clouds import PRICED_ROWS, vm_files
from skyform.plan.catalog.load import IMAGE_FILES, MANIFEST, catalog_home

DEFAULT_BASE_URL = (
    "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8"
)
# each priced cloud's VM table (its infra-table row names it), then its images if published
REQUIRED_FILES = tuple(vm_files(r)[0] for r in PRICED_ROWS)
OPTIONAL_FILES = (*IMAGE_FILES.values(), "common/accelerators.csv")
MAX_BYTES = 256 * 2**20  # far above the real files (a few MB); stops a runaway download
HINT = "Check the URL (`--url BASE` serves BASE/aws/vms.csv, BASE/gcp/vms.csv) and try again."


@dataclass(frozen=True)
class RefreshResult:
    path: str
    url: str
    files: dict[str, int]  # file -> data rows
    fetched_at: str


class _Missing(Exception):
    """HTTP 404 for an optional file."""


def _download(url: str, timeout: float) -> bytes:
    import urllib.error
    import urllib.request

    if url.startswith("file:"):  # a local mirror: a missing file is a 404, as over HTTP
        from urllib.request import url2pathname

        if not Path(url2pathname(url[len("file:") :])).is_file():
            raise _Missing(url)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            expected = response.headers.get("Content-Length")
            data = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise _Missing(url) from None
        raise CatalogError(f"{url}: HTTP {exc.code} {exc.reason}", HINT) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CatalogError(f"{url}: download failed: {reason}", HINT) from None
    if len(data) > MAX_BYTES:
        raise CatalogError(f"{url}: larger than {MAX_BYTES} bytes; refusing it", HINT)
    if expected is not None and expected.isdigit() and int(expected) != len(data):
        raise CatalogError(f"{url}: truncated ({len(data)} of {expected} bytes)", HINT)
    return data


def _validate(name: str, data: bytes, where: str) -> tuple[str, list]:
    """A downloaded file's text and its data rows (a VM table's as VM row tuples, which the
    index is then built from); raises CatalogError if any row is malformed."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{where}: not UTF-8 text: {exc}", HINT) from None
    if name.endswith("vms.csv"):
        rows = tables.parse_vms(text, where, vm_cloud(name), strict=True)
    elif name.endswith("images.csv"):
        columns = ("Tag", "Region", "OS", "OSVersion", "ImageId", "CreationDate")
        rows = tables.parse_table(text, where, columns)
    else:
        rows = tables.parse_table(text, where, ("AcceleratorName", "Clouds"))
    if not rows and name in REQUIRED_FILES:
        raise CatalogError(f"{where}: no rows", HINT)
    return text, rows


def vm_cloud(name: str) -> str:
    """The cloud of a downloaded VM table (`aws/vms.csv` -> aws)."""
    return name.split("/")[0]


def _write_private(path: Path, data: bytes) -> None:
    ensure_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def refresh_catalog(
    base_url: str = DEFAULT_BASE_URL,
    *,
    timeout: float = 60.0,
    now: Callable[[], float] = time.time,
) -> RefreshResult:
    """Download, validate and install a refreshed catalog; return what was installed."""
    from skyform.config import Config  # the trial load below needs an (empty) config
    from skyform.plan.catalog.index import INDEX_FILE
    from skyform.plan.catalog.load import build_from_directory, load_catalog, sources_digest

    base = base_url.rstrip("/")
    target = catalog_home()
    ensure_dir(target.parent)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".catalog-new-"))
    try:
        files: dict[str, dict] = {}
        parsed: dict[str, tuple[str, list]] = {}
        for name in (*REQUIRED_FILES, *OPTIONAL_FILES):
            url = f"{base}/{name}"
            try:
                data = _download(url, timeout)
            except _Missing:
                if name in REQUIRED_FILES:
                    raise CatalogError(f"{url}: HTTP 404 Not Found", HINT) from None
                continue
            text, rows = _validate(name, data, url)
            if name.endswith("vms.csv"):
                parsed[vm_cloud(name)] = (text, rows)  # the index is built from these rows
            _write_private(staging / name, data)
            files[name] = {"sha256": sha256_hex(data), "rows": len(rows)}
        fetched_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now()))
        manifest = {"url": base, "fetched_at": fetched_at, "files": files}
        _write_private(staging / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
        index = staging / INDEX_FILE
        build_from_directory(staging, index, sources_digest(manifest), parsed).close()
        load_catalog(Config(), source=staging)  # must load as a whole before it is used
        _swap_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    row_counts = {name: int(meta["rows"]) for name, meta in files.items()}
    return RefreshResult(path=str(target), url=base, files=row_counts, fetched_at=fetched_at)


def _swap_into_place(staging: Path, target: Path) -> None:
    """Rename `staging` to `target`; an existing catalog is moved aside first, then removed."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(dir=target.parent, prefix=".catalog-old-"))
        os.rename(target, old / "catalog")
    try:
        os.rename(staging, target)
    except OSError:
        if old is not None:  # put the previous catalog back
            os.rename(old / "catalog", target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def catalog_status(catalog, now: float | None = None) -> dict:
    """What `skyform catalog show` reports: which catalog is in use, where, how old, how big."""
    import calendar

    source = catalog.source
    age = None
    if source.fetched_at:
        fetched = calendar.timegm(time.strptime(source.fetched_at, "%Y-%m-%dT%H:%M:%SZ"))
        age = max(0, int((time.time() if now is None else now) - fetched))
    return {
        "kind": source.kind,
        "path": source.path,
        "url": source.url,
        "fetched_at": source.fetched_at,
        "age_seconds": age,
        "digest": catalog.digest,
        "onprem_digest": catalog.onprem_digest,
        "rows": dict(source.file_rows),
        "offers": catalog.offer_counts(),
        "warning": source.warning,
    }
