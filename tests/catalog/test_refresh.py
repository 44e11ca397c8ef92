"""`skyform catalog refresh` against a local HTTP server: success; failures change nothing."""

from __future__ import annotations

import http.server
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from skyform.config import Config
from skyform.errors import CatalogError
from skyform.plan.catalog import load_catalog
from skyform.plan.catalog.refresh import refresh_catalog
from tests.catalog.conftest import bundled_text


class _Server:
    """Serves `files` (path -> bytes); `lie_length` sends a Content-Length larger than the body."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.lie_length: set[str] = set()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = outer.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                extra = 100 if self.path in outer.lie_length else 0
                self.send_header("Content-Length", str(len(body) + extra))
                self.end_headers()
                self.wfile.write(body)
                if extra:
                    self.close_connection = True

            def log_message(self, *args) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v8"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def good(self, aws_price: str = "21.957642") -> None:
        aws = bundled_text("aws_vms.csv").replace(",21.957642,", f",{aws_price},")
        self.files = {
            "/v8/aws/vms.csv": aws.encode(),
            "/v8/gcp/vms.csv": bundled_text("gcp_vms.csv").encode(),
            "/v8/common/accelerators.csv": bundled_text("accelerators.csv").encode(),
        }


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    srv.thread.start()
    srv.good()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def _tree(path: Path) -> dict[str, bytes]:
    if not path.exists():
        return {}
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_refresh_installs_a_private_validated_copy_that_load_uses(server, skyform_home):
    server.good(aws_price="19.5")
    result = refresh_catalog(server.url, now=lambda: 1_700_000_000)
    target = skyform_home / "catalog"
    assert result.path == str(target)
    assert result.files == {"aws/vms.csv": 1152, "gcp/vms.csv": 6889, "common/accelerators.csv": 60}
    assert result.fetched_at == "2023-11-14T22:13:20Z"
    assert _mode(target) == 0o700 and _mode(target / "aws") == 0o700
    assert {_mode(p) for p in target.rglob("*") if p.is_file()} == {0o600}
    catalog = load_catalog(Config())
    assert catalog.source.kind == "refreshed" and catalog.source.url == server.url
    p4d = catalog.query(cloud="aws", region="us-east-1", instance_type="p4d.24xlarge", spot=False)
    assert {o.hourly_price for o in p4d} == {19.5}
    # what the download lacks still comes from the bundle
    assert catalog.query(instance_type="a2-highgpu-8g", region="us-central1")
    assert catalog.image_for("aws", "us-east-1", "custom-gpu-ubuntu")
    leftovers = [p.name for p in skyform_home.iterdir() if p.name.startswith(".catalog")]
    assert leftovers == []


def test_refresh_leaves_a_home_it_did_not_make_as_it_is(server, tmp_path, monkeypatch):
    """The refresh once set SKYFORM_HOME itself to 0700 (SKYFORM_HOME=$HOME: all of it)."""
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o755)
    monkeypatch.setenv("SKYFORM_HOME", str(home))
    refresh_catalog(server.url, now=lambda: 1_700_000_000)
    assert _mode(home) == 0o755 and _mode(home / "catalog") == 0o700


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("missing", "HTTP 404"),
        ("malformed_number", "is not a number"),
        ("negative_price", "is not a price/size"),
        ("truncated_row", "columns, the header has"),
        ("short_body", "truncated"),
        ("bad_header", "header lacks column"),
        ("no_trailing_newline", "does not end with a newline"),
    ],
)
def test_failed_refresh_changes_nothing(server, skyform_home, damage, message):
    refresh_catalog(server.url)  # a first, good refresh
    before = _tree(skyform_home / "catalog")
    before_digest = load_catalog(Config()).digest
    aws = server.files["/v8/aws/vms.csv"].decode()
    if damage == "missing":
        del server.files["/v8/gcp/vms.csv"]
    elif damage == "malformed_number":
        server.files["/v8/aws/vms.csv"] = aws.replace(",21.957642,", ",21.95x,", 1).encode()
    elif damage == "negative_price":
        server.files["/v8/aws/vms.csv"] = aws.replace(",21.957642,", ",-21.9,", 1).encode()
    elif damage == "truncated_row":
        cut = aws.index("\n", len(aws) // 2)
        server.files["/v8/aws/vms.csv"] = (aws[: cut - 30] + "\n").encode()
    elif damage == "short_body":
        server.lie_length.add("/v8/gcp/vms.csv")
    elif damage == "bad_header":
        server.files["/v8/aws/vms.csv"] = aws.replace("SpotPrice", "Spot", 1).encode()
    elif damage == "no_trailing_newline":
        server.files["/v8/aws/vms.csv"] = aws.rstrip("\n").encode()
    with pytest.raises(CatalogError, match=message):
        refresh_catalog(server.url)
    assert _tree(skyform_home / "catalog") == before
    assert load_catalog(Config()).digest == before_digest
    assert [p.name for p in skyform_home.iterdir() if p.name.startswith(".catalog")] == []


def test_failed_first_refresh_leaves_the_bundled_catalog_in_use(server, skyform_home, bundled):
    del server.files["/v8/aws/vms.csv"]
    with pytest.raises(CatalogError, match=r"aws/vms\.csv: HTTP 404"):
        refresh_catalog(server.url)
    assert not (skyform_home / "catalog").exists()
    catalog = load_catalog(Config())
    assert catalog.source.kind == "bundled" and catalog.digest == bundled.digest


def test_unreachable_server_is_a_clear_error(skyform_home):
    with pytest.raises(CatalogError, match="download failed"):
        refresh_catalog("http://127.0.0.1:9/v8", timeout=2)
    assert not (skyform_home / "catalog").exists()


def test_tampered_download_is_never_indexed_the_bundle_is_used_with_a_warning(
    server, skyform_home, bundled
):
    refresh_catalog(server.url)
    home = skyform_home / "catalog"
    gcp = home / "gcp" / "vms.csv"
    os.chmod(gcp, 0o600)
    gcp.write_text(gcp.read_text().replace("0.81406", "0.1"))
    (home / "index.sqlite").unlink()  # so the index must be rebuilt from the edited file
    catalog = load_catalog(Config())
    assert catalog.source.kind == "bundled" and catalog.digest == bundled.digest
    assert catalog.source.warning and "contents changed" in catalog.source.warning


@pytest.mark.parametrize("damage", ["missing", "truncated", "zeroed", "other_format", "stale"])
def test_damaged_refreshed_index_is_rebuilt_from_the_downloaded_files(server, skyform_home, damage):
    server.good(aws_price="19.5")
    refresh_catalog(server.url)
    index = skyform_home / "catalog" / "index.sqlite"
    good = index.read_bytes()
    refreshed_digest = load_catalog(Config()).digest
    if damage == "missing":
        index.unlink()
    elif damage == "truncated":
        index.write_bytes(good[: len(good) // 2])
    elif damage == "zeroed":  # same size, every page after the first wiped
        index.write_bytes(good[:4096] + bytes(len(good) - 4096))
    elif damage == "other_format":
        _set_meta(index, "format", "skyform-catalog-index/0")
    else:  # built from other downloads than the manifest lists
        _set_meta(index, "sources", "0" * 64)
    catalog = load_catalog(Config())
    assert catalog.source.kind == "refreshed" and catalog.source.warning is None
    assert catalog.digest == refreshed_digest
    p4d = catalog.query(cloud="aws", region="us-east-1", instance_type="p4d.24xlarge", spot=False)
    assert {o.hourly_price for o in p4d} == {19.5}
    assert index.read_bytes() == good  # rebuilt in place, the same bytes as the refresh wrote
    assert _mode(index) == 0o600


def _set_meta(index: Path, key: str, value: str) -> None:
    import sqlite3

    conn = sqlite3.connect(index)
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    conn.commit()
    conn.close()


def test_cli_refresh_and_show(server, cli):
    result = cli("catalog", "refresh", "--url", server.url)
    assert result.exit_code == 0, result.output
    assert "aws/vms.csv: 1152 rows" in result.stdout
    show = cli("catalog", "show")
    assert "Catalog in use: refreshed" in show.stdout and server.url in show.stdout
    del server.files["/v8/aws/vms.csv"]
    failed = cli("catalog", "refresh", "--url", server.url)
    assert failed.exit_code == 1 and "HTTP 404" in failed.stderr
    assert "Traceback" not in failed.output


def test_refresh_from_a_local_directory_in_skypilots_layout(tmp_path, skyform_home):
    mirror = tmp_path / "v8"
    for name, table in (("aws/vms.csv", "aws_vms.csv"), ("gcp/vms.csv", "gcp_vms.csv")):
        (mirror / name).parent.mkdir(parents=True, exist_ok=True)
        text = bundled_text(table)
        (mirror / name).write_text(text.replace(",21.957642,", ",20.5,") if "aws" in name else text)
    result = refresh_catalog(mirror.as_uri())  # no common/ or images: optional, like a 404
    assert set(result.files) == {"aws/vms.csv", "gcp/vms.csv"}
    assert (skyform_home / "catalog" / "index.sqlite").is_file()
    catalog = load_catalog(Config())
    p4d = catalog.query(cloud="aws", region="us-east-1", instance_type="p4d.24xlarge", spot=False)
    assert catalog.source.kind == "refreshed" and {o.hourly_price for o in p4d} == {20.5}
