"""`serve logs NAME --controller` follows by default, as `sky serve logs` does: it keeps
printing what the controller appends until Ctrl-C, which ends it cleanly (no traceback);
`--no-follow` prints what there is and returns. The service is a record and its log file (no
controller needed: following reads the file while the service exists)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from servekit import APP_ENV, skyform

from skyform.serve import state


def _service_with_controller_log() -> None:
    state.make_dir("web")
    record = state.ServiceRecord(name="web", task_path="/t/web.yaml", replicas=[])
    state.create_record(record)
    state.write_record(record)
    (state.service_dir("web") / "controller.log").write_text("controller started\n")


def test_the_controller_log_is_followed_until_ctrl_c():
    _service_with_controller_log()
    follower = subprocess.Popen(
        [sys.executable, "-m", "skyform.cli.main", "serve", "logs", "web", "--controller"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **APP_ENV},
    )
    try:
        assert follower.stdout is not None
        assert follower.stdout.readline() == "controller started\n"  # the log so far
        time.sleep(2)
        assert follower.poll() is None, "serve logs --controller returned instead of following"
        with open(state.service_dir("web") / "controller.log", "a") as log:
            log.write("replica 1 READY\n")
        time.sleep(1)
        follower.send_signal(signal.SIGINT)
        out, err = follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert "replica 1 READY" in out  # appended while it followed
    assert "Traceback" not in err, err
    assert follower.returncode == 130


def test_no_follow_prints_the_controller_log_and_returns():
    _service_with_controller_log()
    started = time.monotonic()
    out = skyform("serve", "logs", "web", "--controller", "--no-follow")
    assert out.stdout == "controller started\n"
    assert time.monotonic() - started < 20  # not waiting for the service to go away
