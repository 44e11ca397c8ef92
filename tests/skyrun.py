"""`skyform` run as a user runs it: a process of its own, with a given SKYFORM_HOME, plain
output (no colour, wide lines) and never a terminal a prompt could wait on."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_skyform(
    home: Path,
    *args,
    cwd: Path,
    timeout: float = 120,
    check: int | None = None,
    stdin: str | None = None,
) -> Run:
    """`skyform ARGS...`; `check` asserts the exit code (with the output as the message);
    `stdin` is the input, if any."""
    env = dict(os.environ, SKYFORM_HOME=str(home), COLUMNS="200", NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
        # as in CI: never a terminal that a prompt could wait on (or the given input)
        stdin=subprocess.DEVNULL if stdin is None else None,
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )
    result = Run(proc.returncode, proc.stdout, proc.stderr)
    if check is not None:
        assert result.exit_code == check, result.output
    return result
