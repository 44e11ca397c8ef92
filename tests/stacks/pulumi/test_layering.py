"""Import rules of the Pulumi engine, checked on the source.

- nothing outside skyform/stacks/pulumi/ imports skyform.stacks.pulumi at module level;
- only workspace.py imports pulumi.automation;
- the programs import pulumi and their own provider SDK only (they are exported verbatim);
- inside the package, only the programs and workspace.py import Pulumi at module level, so
  the engine, export and error modules load without the SDKs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import source_imports as imports

PKG = Path(__file__).resolve().parents[3] / "skyform"
PULUMI_PKG = PKG / "stacks" / "pulumi"
SOURCES = sorted(PKG.rglob("*.py"))
PROGRAM_SDKS = {"aws": "pulumi_aws", "gcp": "pulumi_gcp", "kubernetes": "pulumi_kubernetes"}


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
            assert path.name == "workspace.py" or path.parent.name == "programs", (
                f"{rel} imports {module} at module level"
            )


@pytest.mark.parametrize("cloud", sorted(PROGRAM_SDKS))
def test_programs_import_only_pulumi_and_their_provider(cloud):
    path = PULUMI_PKG / "programs" / f"{cloud}.py"
    roots = {module.split(".")[0] for module, _ in imports(path)}
    assert roots == {"pulumi", PROGRAM_SDKS[cloud]}


def test_the_pulumi_package_modules_import_without_the_sdks():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import skyform.stacks.pulumi.engine, skyform.stacks.pulumi.export\n"
        "import skyform.stacks.pulumi.errors, skyform.stacks.pulumi.backend\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
