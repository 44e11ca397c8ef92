"""The start-up budget of the light commands, asserted on the modules each one imports (a
fresh interpreter per command; wall time is too noisy on a shared machine to assert).

- `--help` / `--version` (the console script): no typer, pydantic or rich at all;
- `status` on a fresh machine: no pydantic (no model is needed), no rich (nothing drawn) and
  no Typer (the console script answers it, skyform/cli/fastpath.py);
- `plan` and `show`: no PuLP, Pulumi, Fabric, no importlib.metadata, no database modules on a
  fresh machine; no rich when the output is --json or --markdown, nor for text to a pipe
  (skyform/cli/render/lines.py draws it), no Typer (both are answered before it,
  skyform/cli/fastpath.py); no task-file stack and no pydantic (skyform/plan/planview.py
  reads it) for `show` of a plan that reads back;
- every one of them: no Pulumi SDK, PuLP, Fabric, paramiko, kubernetes client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HEAVY

REPO = Path(__file__).resolve().parents[1]
HELLO = str(REPO / "examples" / "hello.yaml")
CHAIN = str(REPO / "examples" / "pipeline.yaml")  # three tasks in a chain
RICH_DRAWING = ("rich.console", "rich.table", "rich.markup", "rich.text")
PYDANTIC_SCHEMA = ("pydantic", "pydantic_core", "pydantic._internal._generate_schema")
# Entry-point scanning (pydantic's plugin loader imports it even with plugins disabled).
METADATA = "importlib.metadata"


def loaded_by(
    entry: str, args: list[str], home: Path, columns: str = "80"
) -> tuple[int, str, set[str]]:
    """(exit code, stdout, modules) of one command through `entry` ("script": the console
    script's entry point; "app": skyform.cli.main.run, which `-m` and tests use)."""
    call = (
        "from skyform.cli.entry import main\ntry:\n    main()\n"
        "except SystemExit as e:\n    code = e.code or 0\n"
        if entry == "script"
        else "from skyform.cli.main import run\ncode = run(sys.argv[1:])\n"
    )
    code = (
        "import json, sys\ncode = 0\n"
        + call
        + "sys.stderr.write('\\nMODULES=' + json.dumps([code, sorted(sys.modules)]))\n"
    )
    env = dict(os.environ, SKYFORM_HOME=str(home), COLUMNS=columns, NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False
    )
    assert "MODULES=" in proc.stderr, proc.stderr
    exit_code, modules = json.loads(proc.stderr.rsplit("MODULES=", 1)[1])
    return exit_code, proc.stdout, set(modules)


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.fixture
def saved_plan(tmp_path: Path, skyform_home: Path) -> Path:
    out = tmp_path / "plan.json"
    code, _, _ = loaded_by("app", ["plan", HELLO, "-o", str(out)], skyform_home)
    assert code == 0 and out.exists()
    return out


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
def test_help_and_version_import_no_typer_pydantic_or_rich(args, skyform_home):
    code, out, loaded = loaded_by("script", args, skyform_home)
    assert code == 0 and out.startswith(("Usage: skyform", "skyform "))
    assert not _tops(loaded) & {"typer", "click", "pydantic", "rich", *HEAVY}


@pytest.mark.parametrize("args", [["status"], ["status", "--json"]])
def test_status_on_a_fresh_machine_imports_no_models_and_no_rich(args, skyform_home):
    code, out, loaded = loaded_by("script", args, skyform_home)
    assert (code, out) == (0, "[]\n" if "--json" in args else "No existing clusters.\n")
    assert not loaded & {*PYDANTIC_SCHEMA, *RICH_DRAWING}
    assert not _tops(loaded) & {"typer", "click", *HEAVY}


def test_status_of_recorded_clusters_to_a_pipe_imports_no_models_and_no_rich(skyform_home):
    from skyform.plan.model import ClusterSpec, PlacedOffer
    from skyform.state.db import open_state
    from skyform.state.models import ClusterRecord, ClusterStatus

    offer = PlacedOffer(
        cloud="aws", region="us-east-1", zone=None, instance_type="g5.xlarge", spot=False,
        hourly_price=1.006, accelerator="A10G", accelerator_count=1,
    )  # fmt: skip
    with open_state() as db:
        spec = ClusterSpec(name="c1", offer=offer, num_nodes=2)
        db.put_cluster(
            ClusterRecord(name="c1", status=ClusterStatus.UP, spec=spec, hourly_price=1.006)
        )
    code, out, loaded = loaded_by("app", ["status"], skyform_home, columns="120")
    assert code == 0
    row = "c1     aws/us-east-1   2x g5.xlarge (A10G:1)   UP       -          -          $2.012/h"
    assert out.splitlines()[2] == row, out
    assert not loaded & {*PYDANTIC_SCHEMA, *RICH_DRAWING}


@pytest.mark.parametrize(
    "args",
    [
        ["plan", HELLO, "--json"],
        ["show", "{plan}", "--json"],
        ["show", "{plan}", "--markdown"],
    ],
    ids=["plan-json", "show-json", "show-markdown"],
)
def test_json_and_markdown_draw_nothing_so_import_no_rich(args, saved_plan, skyform_home):
    argv = [a.format(plan=saved_plan) for a in args]
    code, out, loaded = loaded_by("script", argv, skyform_home)
    assert code == 0
    assert json.loads(out) if "--json" in argv else out.startswith("#")
    assert not loaded & set(RICH_DRAWING)
    assert not _tops(loaded) & set(HEAVY)
    if argv[0] == "show":  # the strict reader without pydantic (skyform/plan/planview.py)
        assert not _tops(loaded) & {"pydantic", "pydantic_core", "typer", "click"}


@pytest.mark.parametrize(
    "args",
    [
        ["plan", HELLO],
        ["plan", HELLO, "-o", "{dir}/again.json"],
        ["plan", CHAIN, "-o", "{dir}/chain.json"],
        ["show", "{plan}"],
    ],
    ids=["plan", "plan-o", "plan-chain-o", "show"],
)
def test_plan_and_show_import_no_solver_sdk_or_ssh_stack(args, saved_plan, skyform_home):
    argv = [a.format(plan=saved_plan, dir=saved_plan.parent) for a in args]
    # wide enough for the considered-resources table and the long pytest paths in "Saved to"
    code, out, loaded = loaded_by("script", argv, skyform_home, columns="200")
    assert code == 0 and "Plan:" in out
    assert not _tops(loaded) & set(HEAVY)
    assert not loaded & set(RICH_DRAWING)  # stdout is a pipe: the plain printer draws it
    assert METADATA not in loaded
    # snapshot, and store to ask whether the state URL names any state yet: no database module
    light = {"skyform.state.snapshot", "skyform.state.store"}
    assert not {m for m in loaded if m.startswith("skyform.state.")} - light
    assert not _tops(loaded) & {"typer", "click"}  # answered before Typer (cli/fastpath.py)
    if argv[0] == "show":
        assert not {m for m in loaded if m.startswith("skyform.spec") or m == "yaml"}
        assert not _tops(loaded) & {"pydantic", "pydantic_core"}
