"""Layering rules from DESIGN.md, checked on the source so a regression fails CI.

- nothing imports `skyform.cli` except the CLI itself;
- `rich` is imported only under `skyform/cli/render/`;
- nothing below `skyform/cli/` calls print();
- Pulumi SDKs only under `skyform/stacks/pulumi/`, PuLP only in the optimizer, and neither at
  module level anywhere outside them (they cost seconds to import);
- `skyform.plan` depends only on `spec`, `errors`, `config` (and itself).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import source_imports

PKG = Path(__file__).resolve().parents[1] / "skyform"
SOURCES = sorted(PKG.rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(PKG.parent).as_posix()


def _root(module: str) -> str:
    return module.split(".")[0]


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_layering(path: Path):
    rel = _rel(path)
    in_cli = rel.startswith("skyform/cli/")
    in_render = rel.startswith("skyform/cli/render/")
    in_pulumi = rel.startswith("skyform/stacks/pulumi/")
    in_optimizer = rel.startswith("skyform/plan/optimizer")
    for module, top in source_imports(path):
        if module.startswith("skyform.cli"):
            assert in_cli, f"{rel} imports {module}: nothing outside cli/ may import the CLI"
        if _root(module) == "rich":
            assert in_render, f"{rel} imports rich: only skyform/cli/render/ may"
        if _root(module).startswith("pulumi"):
            assert in_pulumi, f"{rel} imports {module}: only skyform/stacks/pulumi/ may"
        if _root(module) == "pulp":
            assert in_optimizer and not top, f"{rel} imports pulp at module level or outside it"
        if rel.startswith("skyform/plan/") and module.startswith("skyform."):
            layer = module.split(".")[1]
            # inputfile, paths, infra (the table), digests and frozen (the model bases) are
            # leaves (errors, pydantic and the standard library only)
            leaves = {"inputfile", "paths", "infra", "digests", "frozen"}
            allowed = {"plan", "spec", "errors", "config", *leaves}
            assert layer in allowed, f"{rel} imports {module}"


@pytest.mark.parametrize(
    "path", [p for p in SOURCES if not _rel(p).startswith("skyform/cli/")], ids=_rel
)
def test_no_print_below_cli(path: Path):
    tree = ast.parse(path.read_text())
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
    ]
    assert not calls, f"{_rel(path)} calls print() on line {calls[0].lineno}"
