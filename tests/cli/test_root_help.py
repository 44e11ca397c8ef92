"""`skyform --help`, `-h` and `--version` are printed from saved text without importing
Typer: that text must be exactly what the Typer app prints, and is used only where click
would render the same bytes (terminals of 80 columns or more)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from skyform import __version__
from skyform.cli.root_help import ROOT_HELP

REGENERATE = "the saved help is stale: run .venv/bin/python scripts/build_root_help.py"


def console_script(*args: str, columns: int = 80) -> tuple[str, set[str]]:
    """stdout of the `skyform` console script's entry point, and the modules it loaded."""
    code = (
        "import json, sys\n"
        "from skyform.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('\\nMODULES=' + json.dumps(sorted(sys.modules)))\n"
    )
    env = dict(os.environ, COLUMNS=str(columns))
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False
    )
    return proc.stdout, set(json.loads(proc.stderr.rsplit("MODULES=", 1)[1]))


def test_saved_help_is_what_typer_prints_at_80_columns(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = cli("--help")
    assert result.exit_code == 0
    assert result.stdout == ROOT_HELP, REGENERATE


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_is_printed_without_typer(flag):
    out, loaded = console_script(flag)
    assert out == ROOT_HELP
    assert not {m for m in loaded if m.split(".")[0] in ("typer", "pydantic", "rich")}


def test_version_is_printed_without_typer(cli):
    out, loaded = console_script("--version")
    assert out == f"skyform {__version__}\n" == cli("--version").stdout
    assert "typer" not in loaded


def test_narrow_terminal_gets_typers_own_rendering(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    out, loaded = console_script("--help", columns=60)
    assert out == cli("--help").stdout != ROOT_HELP
    assert "typer" in loaded
