"""`plan` fetches SkyPilot's catalog when the copy in use is due, as SkyPilot does; offline it
costs a bounded moment once per period; "no offer matches" on the bundle says it is a subset."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from skyform.plan.catalog.autofetch import PROBE_SECONDS
from tests.catalog.conftest import bundled_text

M5 = "m5.large,,,2.0,8.0,,0.096,0.035,us-east-1,use1-az1,x86_64\n"
TASK = "resources:\n  infra: aws/us-east-1\n  instance_type: m5.large\nrun: echo hi\n"


class _Mirror:
    """SkyPilot's catalog layout on loopback (the bundled tables plus an m5.large row);
    counts the requests it gets."""

    def __init__(self) -> None:
        files = {
            "/v8/aws/vms.csv": (bundled_text("aws_vms.csv") + M5).encode(),
            "/v8/gcp/vms.csv": bundled_text("gcp_vms.csv").encode(),
        }
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(self.path)
                body = files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v8"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


class _Silent:
    """Accepts connections and never answers: a network that lets nothing through."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.accepted: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v8"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)


@pytest.fixture
def fetching(monkeypatch) -> None:
    monkeypatch.setenv("SKYFORM_CATALOG_AUTO_FETCH", "1")


@pytest.fixture
def mirror(monkeypatch, fetching) -> Iterator[_Mirror]:
    server = _Mirror()
    monkeypatch.setenv("SKYFORM_CATALOG_URL", server.url)
    yield server
    server.httpd.shutdown()


def test_plan_fetches_the_full_catalog_when_the_copy_in_use_is_due(cli, mirror, tmp_path):
    task = tmp_path / "m5.yaml"
    task.write_text(TASK)
    planned = cli("plan", task)
    assert planned.exit_code == 0, planned.output
    assert f"fetched SkyPilot's price catalog from {mirror.url}" in planned.output
    assert "m5.large" in planned.stdout
    shown = json.loads(cli("catalog", "show", "--json").stdout)
    assert (shown["kind"], shown["url"]) == ("refreshed", mirror.url)

    asked = len(mirror.requests)
    again = cli("plan", task)  # fetched moments ago: not due for PULL_HOURS
    assert again.exit_code == 0 and "fetched" not in again.output
    assert len(mirror.requests) == asked


def test_offline_the_attempt_is_bounded_and_made_once_per_period(
    cli, fetching, monkeypatch, tmp_path
):
    silent = _Silent()
    monkeypatch.setenv("SKYFORM_CATALOG_URL", silent.url)
    task = tmp_path / "t.yaml"
    task.write_text("resources: {infra: local}\nrun: echo hi\n")
    started = time.monotonic()
    first = cli("plan", task)
    took = time.monotonic() - started
    assert first.exit_code == 0, first.output
    assert f"no answer within {PROBE_SECONDS:g} s" in first.output
    assert "next try in 7 h" in first.output
    assert len(silent.accepted) == 1
    started = time.monotonic()
    second = cli("plan", task)
    assert time.monotonic() - started < took - PROBE_SECONDS / 2  # no second wait
    assert second.exit_code == 0 and "could not fetch" not in second.output
    assert len(silent.accepted) == 1
    silent.sock.close()


def test_no_offer_on_the_bundled_catalog_says_it_is_a_subset(cli, tmp_path):
    task = tmp_path / "m5.yaml"
    task.write_text(TASK)
    result = cli("plan", task)
    assert result.exit_code != 0
    assert "no offer matches m5.large" in result.stderr
    assert "the bundled one, a subset of SkyPilot's" in result.stderr
    assert "`skyform catalog refresh`" in result.stderr
