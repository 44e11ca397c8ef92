"""A real service on `local` (`serve up`, one replica, the load balancer in front): after
traffic its page charts requests per second and p50/p95 latency from the traffic windows
its controller records in the store (1 s windows here), and lists its replica and
revisions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from dashkit import screenshot, wait_for
from selenium.webdriver.common.by import By

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))
from servekit import ClientLoop, get, skyform
from servekit import wait_for as wait_for_status

from skyform.serve import sandbox

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]

APP = Path(__file__).parents[1] / "serve" / "replica_app.py"
SERVICE = f"""\
name: charted
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 20
  replicas: 1
resources:
  infra: local
  ports: 8080
run: exec {sys.executable} {APP} 8080
"""


def test_a_services_charts_after_traffic(tmp_path, dashboard, browser, monkeypatch):
    monkeypatch.setenv("SKYFORM_SERVE_STATS_WINDOW", "1")  # the controller's windows
    task = tmp_path / "charted.yaml"
    task.write_text(SERVICE)
    skyform("serve", "up", str(task), "-y")
    try:
        wait_for_status("charted", "READY")
        endpoint = skyform("serve", "status", "charted", "--endpoint").stdout.strip()
        for _ in range(50):
            assert get(f"{endpoint}/echo")[0] == 200
        board = dashboard()
        browser.get(board.base + "/services")
        row = browser.find_element(By.CSS_SELECTOR, "#services tbody tr")
        assert "charted" in row.text and "READY" in row.text and "1/1 ready" in row.text
        browser.get(board.base + "/services/charted")
        with ClientLoop(f"{endpoint}/echo", clients=2) as load:
            # the page redraws every 2 s: the request count grows past what it first showed
            total = browser.find_element(By.ID, "rps-total")
            wait_for(lambda: int(total.text) >= 50, what="the first 50 requests")
            first = int(total.text)
            wait_for(lambda: int(total.text) > first + 20, timeout=20, what="a redraw")
            latency = browser.find_element(By.ID, "latency-chart-count")
            wait_for(lambda: int(latency.text) >= 2, timeout=20, what="latency windows")
            p95 = browser.find_element(By.ID, "latency95-chart-count")
            wait_for(lambda: int(p95.text) >= 2, timeout=20, what="p95 windows")
        assert load.failed == 0
        screenshot(browser, "service")
        points = browser.find_element(By.CSS_SELECTOR, "#rps-chart polyline")
        assert len(points.get_attribute("points").split()) >= 2
        drawn = browser.find_element(By.CSS_SELECTOR, "#latency-chart polyline")
        assert len(drawn.get_attribute("points").split()) >= 2
        replicas = browser.find_elements(By.CSS_SELECTOR, "#replicas tbody tr")
        assert len(replicas) == 1 and "READY" in replicas[0].text
    finally:
        skyform("serve", "down", "charted", "-y")
