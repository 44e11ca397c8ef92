"""A managed job's plan revision drawn as a Terraform-style diff from its plan JSON, and the
cost page after real clusters ran."""

from __future__ import annotations

import time

import pytest
import yaml
from dashkit import screenshot, wait_for
from selenium.webdriver.common.by import By

TASK = """\
name: nightly
resources: {infra: local}
run: echo trained
"""


def test_a_managed_jobs_plan_revision_is_shown_as_a_diff(sky, dashboard, browser, tmp_path):
    task = tmp_path / "nightly.yaml"
    task.write_text(TASK)
    sky("jobs", "launch", task, "-y", timeout=180)
    board = dashboard()
    browser.get(board.base + "/plans")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.revisions tbody tr")
    assert len(rows) == 1 and "launch" in rows[0].text.lower()
    rows[0].find_element(By.CSS_SELECTOR, "td:nth-child(2) a").click()  # revision 1
    plan = browser.find_element(By.ID, "plan")
    screenshot(browser, "plan-diff")
    head = plan.find_element(By.CLASS_NAME, "change-head").text
    assert head.startswith("+ cluster ") and head.endswith("will be created")
    lines = [e.text for e in plan.find_elements(By.CLASS_NAME, "attr")]
    assert "+ infra = local" in lines and "+ nodes = 1" in lines
    assert "1 to add, 0 to change, 0 to destroy" in plan.find_element(By.CLASS_NAME, "summary").text

    browser.get(board.base + "/managed/1")
    assert "SUCCEEDED" in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_elements(By.CSS_SELECTOR, "table.revisions tbody tr")
    state = browser.find_element(By.ID, "log-state")
    wait_for(lambda: "ended" in state.text, what="the managed job's output")
    assert "(nightly) trained" in browser.find_element(By.ID, "log").text.splitlines()
    assert state.text == "ended: SUCCEEDED"
    screenshot(browser, "managed-job")


def _priced_pool(home, nodes) -> None:
    """Pool `lab` of two sshd nodes at $0.50/h and $2.00/h."""
    hosts = []
    for i, price in ((0, 0.5), (1, 2.0)):
        h = nodes.handle(i)
        hosts.append(
            {"host": h.host, "port": h.port, "user": h.user, "identity_file": h.identity_file,
             "cpus": 2, "memory": 4, "hourly_price": price}
        )  # fmt: skip
    (home / "config.yaml").write_text(yaml.safe_dump({"ssh_pools": {"lab": {"hosts": hosts}}}))


@pytest.mark.e2e
def test_the_cost_page_charts_what_ran(
    sky, dashboard, browser, tmp_path, skyform_home, fresh_ssh_nodes
):
    _priced_pool(skyform_home, fresh_ssh_nodes)
    task = tmp_path / "t.yaml"
    task.write_text("name: t\nresources: {infra: ssh/lab}\nrun: echo hi\n")
    sky("launch", "-c", "cheap", task, "-y")  # the cheapest host first
    sky("launch", "-c", "dear", task, "-y")
    time.sleep(2)  # both have cost something
    board = dashboard()
    browser.get(board.base + "/cost?days=1")
    screenshot(browser, "cost")
    rows = browser.find_elements(By.CSS_SELECTOR, "#cost tbody tr")
    cells = {r.find_element(By.TAG_NAME, "td").text: r.text for r in rows}
    assert set(cells) == {"cheap", "dear"}
    assert "$0.50/h" in cells["cheap"] and "$2.00/h" in cells["dear"]
    bars = browser.find_elements(By.CSS_SELECTOR, "#cost-by-cluster rect.bar")
    heights = {
        b.find_element(By.TAG_NAME, "title").get_attribute("textContent").split(":")[0]: float(
            b.get_attribute("height")
        )
        for b in bars
    }
    assert heights["dear"] > heights["cheap"] > 0  # the dearer cluster's bar is taller
    days = browser.find_elements(By.CSS_SELECTOR, "#cost-by-day rect.bar")
    assert days and float(days[-1].get_attribute("height")) > 0
