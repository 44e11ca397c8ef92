"""Who may use the dashboard: a token off the default loopback address, loopback Host names
only without one (DNS rebinding), and actions only with --allow-actions, confirmed, from the
dashboard's own pages (a cross-site form is refused by its Origin and its missing CSRF
token)."""

from __future__ import annotations

import http.server
import re
import threading
import urllib.parse

import pytest
from dashkit import screenshot, wait_for
from selenium.webdriver.common.by import By

TOKEN = "team-token-0123456789"


def test_another_address_needs_the_token(dashboard, browser):
    board = dashboard("--host", "127.0.0.2", env={"SKYFORM_DASHBOARD_TOKEN": TOKEN})
    assert board.url.endswith(f"/?token={TOKEN}")  # printed at start
    browser.get(board.base + "/clusters")
    screenshot(browser, "token-refused")
    assert "401 Unauthorized" in browser.find_element(By.TAG_NAME, "h1").text
    assert "Clusters" not in browser.page_source
    browser.get(board.base + "/clusters?token=not-" + TOKEN)
    assert "401 Unauthorized" in browser.find_element(By.TAG_NAME, "h1").text

    browser.get(board.url)  # the printed link: the token becomes a cookie
    wait_for(lambda: browser.find_element(By.TAG_NAME, "h1").text == "Clusters")
    assert "token" not in browser.current_url
    browser.get(board.base + "/jobs")  # and later pages need no token in the address
    assert browser.find_element(By.TAG_NAME, "h1").text == "Jobs"

    assert board.request("/clusters")[0] == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert board.request("/clusters", headers=bearer)[0] == 200


def test_a_fresh_token_when_none_is_given(dashboard):
    board = dashboard("--host", "127.0.0.2")
    token = urllib.parse.parse_qs(urllib.parse.urlsplit(board.url).query)["token"][0]
    assert len(token) >= 24
    assert board.request("/clusters")[0] == 401
    assert board.request("/clusters", headers={"Authorization": f"Bearer {token}"})[0] == 200


def test_on_loopback_only_loopback_host_names_are_answered(dashboard):
    board = dashboard()
    port = urllib.parse.urlsplit(board.base).port
    assert "?token" not in board.url
    assert board.request("/clusters", headers={"Host": f"localhost:{port}"})[0] == 200
    status, body = board.request("/clusters", headers={"Host": f"rebound.example:{port}"})
    assert status == 421 and "localhost only" in body


@pytest.fixture
def victim(sky, tmp_path):
    task = tmp_path / "victim.yaml"
    task.write_text("name: victim\nresources: {infra: local}\nrun: echo hi\n")
    sky("launch", "-c", "victim", task, "-y")
    return "victim"


def _exists(sky, name: str) -> bool:
    return name in sky("status").stdout


def test_actions_are_refused_without_allow_actions(dashboard, browser, sky, victim):
    board = dashboard()
    browser.get(board.base + f"/clusters/{victim}")
    assert not browser.find_elements(By.CSS_SELECTOR, "a.action")
    assert "read-only" in browser.find_element(By.CLASS_NAME, "mode").text
    origin = {"Origin": board.base, "Content-Type": "application/x-www-form-urlencoded"}
    status, body = board.request(
        "/actions/down", method="POST", headers=origin, data=b"cluster=victim&csrf=x"
    )
    assert status == 403 and "--allow-actions" in body
    assert board.request(f"/actions/down?cluster={victim}")[0] == 403
    assert _exists(sky, victim)


def _csrf(board, cluster: str) -> str:
    status, page = board.request(f"/actions/down?cluster={cluster}")
    assert status == 200
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found
    return found.group(1)


def test_an_action_from_another_origin_is_refused(dashboard, sky, victim):
    board = dashboard("--allow-actions")
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    data = f"cluster={victim}&csrf={_csrf(board, victim)}".encode()
    for origin in (None, "http://evil.example", "null"):
        headers = {**form, **({"Origin": origin} if origin else {})}
        status, body = board.request("/actions/down", method="POST", headers=headers, data=data)
        assert status == 403 and "Cross-site" in body, origin
    wrong = f"cluster={victim}&csrf=guessed".encode()
    status, _ = board.request(
        "/actions/down", method="POST", headers={**form, "Origin": board.base}, data=wrong
    )
    assert status == 403
    assert _exists(sky, victim)


class _Attacker(http.server.BaseHTTPRequestHandler):
    target = ""

    def do_GET(self):
        page = (
            f'<form id=f method=post action="{self.target}/actions/down">'
            "<input name=cluster value=victim></form>"
            "<script>document.getElementById('f').submit()</script>"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args):
        pass


def test_a_cross_site_form_in_the_browser_changes_nothing(dashboard, browser, sky, victim):
    board = dashboard("--allow-actions")
    _Attacker.target = board.base
    site = http.server.HTTPServer(("127.0.0.3", 0), _Attacker)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        browser.get(f"http://127.0.0.3:{site.server_address[1]}/")
        wait_for(lambda: "403" in browser.find_element(By.TAG_NAME, "body").text)
        screenshot(browser, "cross-site-refused")
        assert "Cross-site request refused" in browser.page_source
    finally:
        site.shutdown()
    assert _exists(sky, victim)


def test_an_allowed_action_is_confirmed_first(dashboard, browser, sky, victim):
    board = dashboard("--allow-actions")
    browser.get(board.base + f"/clusters/{victim}")
    browser.find_element(By.LINK_TEXT, "Set autostop…").click()
    minutes = browser.find_element(By.ID, "minutes")
    minutes.clear()
    minutes.send_keys("15")
    assert "tear it down" in browser.find_element(By.ID, "idle").text  # local cannot stop
    browser.find_element(By.ID, "confirm").click()
    assert browser.find_element(By.ID, "outcome").text == "autostop of victim: 15m (down)"
    assert "15m (down)" in sky("status").stdout

    browser.get(board.base + f"/clusters/{victim}")
    browser.find_element(By.LINK_TEXT, "Tear down").click()
    question = browser.find_element(By.CLASS_NAME, "question").text
    assert question.startswith("Tear down cluster victim?")
    screenshot(browser, "confirm")
    assert _exists(sky, victim)  # asking changed nothing
    browser.find_element(By.ID, "confirm").click()
    outcome = wait_for(
        lambda: browser.find_elements(By.ID, "outcome"), timeout=60, what=browser.page_source
    )
    assert outcome[0].text == "took down victim"
    assert not _exists(sky, victim)


def test_a_running_job_is_cancelled_from_its_page(dashboard, browser, sky, tmp_path):
    task = tmp_path / "long.yaml"
    task.write_text("name: long\nresources: {infra: local}\nrun: sleep 120\n")
    sky("launch", "-c", "busy", task, "-y", "-d")
    board = dashboard("--allow-actions")
    browser.get(board.base + "/clusters/busy/jobs/1")
    browser.find_element(By.LINK_TEXT, "Cancel job").click()
    assert browser.find_element(By.CLASS_NAME, "question").text == "Cancel job 1 on cluster busy?"
    browser.find_element(By.ID, "confirm").click()
    outcome = wait_for(lambda: browser.find_elements(By.ID, "outcome"), timeout=60)
    assert outcome[0].text == "cancelled 1 job(s) on busy"
    assert "CANCELLED" in sky("queue", "busy").stdout
