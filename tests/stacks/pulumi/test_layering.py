"""Import rules of the Pulumi engine, checked on the source.

- nothing outside skyform/stacks/pulumi/ imports skyform.stacks.pulumi at module level;
- only workspace.py imports pulumi.automation;
- the programs (`<cloud>/program.py`) import pulumi and their own provider SDK only (they
  are exported verbatim);
- inside the package, only the programs and workspace.py import Pulumi at module level, so
  the engine, export, error modules and the cloud folders load without the SDKs;
- every infra the table gives the pulumi engine has its folder, program and CLOUD.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import source_imports as imports

from skyform.infra import BY_NAME, PULUMI

PKG = Path(__file__).resolve().parents[3] / "skyform"
PULUMI_PKG = PKG / "stacks" / "pulumi"
SOURCES = sorted(PKG.rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(PKG.parent).as_posix()


def in_pulumi_pkg(path: Path) -> bool:
    return PULUMI_PKG in path.parents


@pytest.mark.parametrize("path", [p for p in SOURCES if not in_pulumi_pkg(p)], ids=_rel)
def test_nothing_outside_imports_the_pulumi_engine_at_module_level(path):
    for module, top in imports(path):
        if module.startswith("skyform.stacks.pulumi"):
            assert not top, f"{_rel(path)} imports {module} at module level"


@pytest.mark.parametrize("path", sorted(PULUMI_PKG.rglob("*.py")), ids=_rel)
def test_pulumi_imports_inside_the_package(path):
    rel = _rel(path)
    for module, top in imports(path):
        root = module.split(".")[0]
        if module.startswith("pulumi.automation"):
            assert path.name == "workspace.py", f"{rel} imports {module}: only workspace.py may"
        if root.startswith("pulumi") and top:
            assert path.name == "workspace.py" or path.name == "program.py", (
                f"{rel} imports {module} at module level"
            )


@pytest.mark.parametrize("cloud", PULUMI)
def test_programs_import_only_pulumi_and_their_provider(cloud):
    path = PULUMI_PKG / cloud / "program.py"
    roots = {module.split(".")[0] for module, _ in imports(path)}
    assert roots == {"pulumi", BY_NAME[cloud].sdk_module}


@pytest.mark.parametrize("cloud", PULUMI)
def test_every_pulumi_infra_has_its_cloud_folder(cloud):
    from skyform.stacks.pulumi.cloud import program_path, pulumi_cloud

    assert pulumi_cloud(cloud).name == cloud
    assert program_path(cloud) == PULUMI_PKG / cloud / "program.py"
    assert "def register(" in program_path(cloud).read_text()


def test_the_pulumi_package_modules_import_without_the_sdks():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import skyform.stacks.pulumi.engine, skyform.stacks.pulumi.export\n"
        "import skyform.stacks.pulumi.errors, skyform.stacks.pulumi.backend\n"
        "import skyform.stacks.pulumi.health\n"
        f"import {', '.join(f'skyform.stacks.pulumi.{c}' for c in PULUMI)}\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
