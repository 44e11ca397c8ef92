"""Helpers of the dashboard tests (importable as `dashkit`): the dashboard as its own process,
the browser, screenshots kept under .artifacts/dashboard/ (gitignored) to look at."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts" / "dashboard"
CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"


def missing_browser() -> str | None:
    for path in (CHROMIUM, DRIVER):
        if not shutil.which(path):
            return f"{path} is not installed (.ci/run installs chromium and chromium-driver)"
    return None


def make_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1280,860", "--disable-gpu"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    driver.set_page_load_timeout(30)
    return driver


def screenshot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def wait_for(check, timeout: float = 30, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@dataclass
class Dashboard:
    proc: subprocess.Popen
    url: str  # as printed (with ?token=... when one is needed)

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0].rstrip("/")

    @classmethod
    def start(cls, home: Path, flags: list[str], env: dict[str, str]) -> Dashboard:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skyform.cli.main", "dashboard", "--port", "0", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "SKYFORM_HOME": str(home), "NO_COLOR": "1", **env},
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert " at http://" in line, line + (proc.stderr.read() if proc.stderr else "")
        return cls(proc, line.split(" at ", 1)[1].split()[0])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def request(
        self,
        path: str,
        *,
        method: str = "GET",
        headers: dict | None = None,
        data: bytes | None = None,
    ) -> tuple[int, str]:
        req = urllib.request.Request(
            self.base + path, data=data, method=method, headers=headers or {}
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
