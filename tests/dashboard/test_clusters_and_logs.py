"""The dashboard over real `local` clusters: the cluster list, a job's log while it prints,
and a job whose name and output carry HTML shown as text (nothing of it runs)."""

from __future__ import annotations

import json
import sqlite3

from dashkit import screenshot, wait_for
from selenium.webdriver.common.by import By

TASK = """\
name: {name}
resources: {{infra: local}}
run: |
  {run}
"""


def _task(tmp_path, name: str, run: str):
    path = tmp_path / f"{name}.yaml"
    path.write_text(TASK.format(name=name, run=run))
    return path


def test_cluster_list_shows_the_launched_clusters(sky, dashboard, browser, tmp_path):
    for name in ("alpha", "beta"):
        sky("launch", "-c", name, _task(tmp_path, f"t-{name}", "echo hello"), "-y")
    sky("autostop", "beta", "-i", "30", "--down")
    board = dashboard()
    browser.get(board.base + "/clusters")
    rows = browser.find_elements(By.CSS_SELECTOR, "#clusters tbody tr")
    cells = {r.find_element(By.TAG_NAME, "td").text: r.text for r in rows}
    screenshot(browser, "clusters")
    assert set(cells) == {"alpha", "beta"}
    assert "UP" in cells["alpha"] and "local" in cells["alpha"]
    assert "30m (down)" in cells["beta"] and "30m" not in cells["alpha"]  # the AUTOSTOP column

    browser.find_element(By.LINK_TEXT, "alpha").click()
    wait_for(lambda: "Cluster alpha" in browser.find_element(By.TAG_NAME, "h1").text)
    nodes = browser.find_elements(By.CSS_SELECTOR, "#nodes tbody tr")
    assert len(nodes) == 1
    jobs = browser.find_elements(By.CSS_SELECTOR, "table.jobs tbody tr")
    assert len(jobs) == 1 and "SUCCEEDED" in jobs[0].text and "t-alpha" in jobs[0].text
    screenshot(browser, "cluster")


def test_the_log_view_shows_lines_while_the_job_prints(sky, dashboard, browser, tmp_path):
    run = 'for i in $(seq 1 8); do echo "tick $i"; sleep 1; done'
    sky("launch", "-c", "ticker", _task(tmp_path, "ticker", run), "-y", "-d")
    board = dashboard()
    browser.get(board.base + "/clusters/ticker/jobs/1")
    log = browser.find_element(By.ID, "log")
    wait_for(lambda: "tick 2" in log.text, what="the first lines")
    early = log.text
    assert "tick 8" not in early  # the page shows the job while it runs...
    screenshot(browser, "log-running")
    state = browser.find_element(By.ID, "log-state")
    wait_for(lambda: "ended" in state.text, timeout=30, what="the end of the job")
    # ...and the lines it printed since, without a reload
    assert [f"tick {i}" for i in range(1, 9)] == log.text.split("\n")[:8]
    assert "SUCCEEDED" in state.text
    screenshot(browser, "log-ended")


HOSTILE_RUN = (
    """echo '<script>document.title="pwned-run"</script>"""
    """<img src=x onerror="document.title='"'"'pwned-img'"'"'">'"""
)


def test_html_in_a_job_name_and_its_output_is_shown_as_text(
    sky, dashboard, browser, tmp_path, skyform_home
):
    """Task names are checked by the task reader, but the store is untrusted input too (a
    teammate's PostgreSQL, an older version): the job's name is rewritten there."""
    sky("launch", "-c", "hostile", _task(tmp_path, "hostile", HOSTILE_RUN), "-y")
    name = "<img src=x onerror=\"document.title='pwned-name'\"><b>bold</b>"
    with sqlite3.connect(skyform_home / "state.db") as db:
        (text,) = db.execute("SELECT record FROM jobs WHERE cluster='hostile'").fetchone()
        record = json.loads(text)
        assert record["name"] == "hostile"
        record["name"] = name
        db.execute("UPDATE jobs SET record=? WHERE cluster='hostile'", (json.dumps(record),))
    board = dashboard()
    browser.get(board.base + "/jobs")
    assert name in browser.find_element(By.CSS_SELECTOR, "table.jobs").text
    browser.get(board.base + "/clusters/hostile/jobs/1")
    log = browser.find_element(By.ID, "log")
    wait_for(lambda: "ended" in browser.find_element(By.ID, "log-state").text)
    screenshot(browser, "escaping")
    assert browser.find_element(By.ID, "job-name").text == name
    assert '<script>document.title="pwned-run"</script>' in log.text
    assert "pwned" not in browser.title
    assert not browser.find_elements(By.CSS_SELECTOR, "main img, main b, main script")
