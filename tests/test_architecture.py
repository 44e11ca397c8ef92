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
            # inputfile, paths, infra (the table), digests, frozen (the model bases) and
            # jobvalues (the rules of env names and mount destinations) are leaves (errors,
            # pydantic and the standard library only)
            leaves = {"inputfile", "paths", "infra", "digests", "frozen", "jobvalues"}
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


# --- the house: import graph, layers, where use cases live (issue #12) ---------------------

# DESIGN.md's layer order, top to bottom: a module imports its own layer or the ones below.
# serve/ is the services subsystem (controller, replica manager, load balancer), below the
# verbs: its verbs' use cases are in ops/serve/, and its controller's cluster work (plan,
# apply, down) is handed in by its entry point there (serve/clusters.py). controllers/ is
# what the job and service controllers share (the adoption loop, the lease).
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"cli"}),
    frozenset({"ops"}),
    frozenset({"serve"}),
    frozenset({"lifecycle", "recovery", "controllers"}),
    frozenset({"stacks", "exec", "cost", "storage"}),
    frozenset({"state"}),
    frozenset({"plan"}),
    frozenset({"spec"}),
    frozenset(
        {"config", "errors", "paths", "inputfile", "infra", "digests", "frozen", "jobvalues"}
        | {"__init__"}
    ),
)
# Leaves at the package top; every use case lives in ops/ (a verb family) or a layer package.
TOP_LEVEL_MODULES = {
    "__init__",
    "errors",
    "config",
    "paths",
    "inputfile",
    "infra",
    "digests",
    "frozen",
    "jobvalues",
}

# Known today, to be emptied (each entry names who removes it). Never add to these.
KNOWN_CYCLES: dict[frozenset[str], str] = {}  # emptied by infra: none left
KNOWN_LAYER_BREAKS: dict[tuple[str, str], str] = {}  # emptied by infra: none left


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in SOURCES}


def _imports(path: Path, *, top_only: bool) -> set[str]:
    """The skyform modules `path` imports (`from pkg import mod` counts as pkg.mod)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = tree.body if top_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in MODULES:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return found


def _graph(*, top_only: bool) -> dict[str, set[str]]:
    return {m: _imports(p, top_only=top_only) - {m} for m, p in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _cycle_path(graph: dict[str, set[str]], members: set[str]) -> list[str]:
    """A shortest cycle through the component's first module, e.g. [a, b, a] (BFS)."""
    start = min(members)
    came_from: dict[str, str] = {}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if w not in came_from:
                came_from[w] = v
                queue.append(w)
    raise AssertionError(f"no cycle through {sorted(members)}")


def test_no_import_cycles_at_module_level():
    graph = _graph(top_only=True)
    cycles = [_cycle_path(graph, set(c)) for c in _cycles(graph)]
    assert not cycles, "import cycles between modules: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_import_cycles_counting_imports_inside_functions():
    """A lazy import still depends on the other module; only the shrinking list may remain."""
    graph = _graph(top_only=False)
    cycles = _cycles(graph)
    components = {frozenset(c): c for c in cycles}
    new = [_cycle_path(graph, set(c)) for m, c in components.items() if m not in KNOWN_CYCLES]
    assert not new, "import cycles between modules: " + "; ".join(" -> ".join(c) for c in new)
    fixed = set(KNOWN_CYCLES) - set(components)
    assert not fixed, f"remove these from KNOWN_CYCLES, they are gone: {[sorted(f) for f in fixed]}"


def test_the_cycle_check_sees_a_cycle_through_a_lazy_import(tmp_path: Path):
    """The checks above cannot pass by accident: an import inside a function counts for the
    full graph only, and a loop of imports is found and named."""
    first = tmp_path / "first.py"
    first.write_text("import skyform.errors\n\ndef f():\n    import skyform.config\n")
    assert _imports(first, top_only=True) == {"skyform.errors"}
    assert _imports(first, top_only=False) == {"skyform.errors", "skyform.config"}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycle_path(graph, {"a", "b", "c"}) == ["a", "b", "c", "a"]


def _top_level_classes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in SOURCES:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(_rel(path))
    return found


def test_one_name_one_thing_no_class_defined_in_two_modules():
    """One word, one thing (#12): two classes of one name in two modules are two meanings a
    reader has to tell apart by their import line."""
    twice = {name: paths for name, paths in _top_level_classes().items() if len(paths) > 1}
    assert not twice, f"classes defined in more than one module: {twice}"


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    for rank, names in enumerate(LAYERS):
        if top in names:
            return rank
    raise AssertionError(f"{module}: place skyform/{top} in LAYERS (DESIGN.md's order)")


def test_imports_follow_the_layer_order():
    breaks = {
        (m, dep)
        for m, deps in _graph(top_only=False).items()
        for dep in deps
        if _layer(dep) < _layer(m)
    }
    new = sorted(breaks - set(KNOWN_LAYER_BREAKS))
    assert not new, "imports against DESIGN.md's layer order: " + ", ".join(
        f"{a} -> {b}" for a, b in new
    )
    fixed = set(KNOWN_LAYER_BREAKS) - breaks
    assert not fixed, f"remove these from KNOWN_LAYER_BREAKS, they are gone: {sorted(fixed)}"


def test_no_loose_use_case_modules_at_the_package_top():
    loose = sorted(p.stem for p in PKG.glob("*.py") if p.stem not in TOP_LEVEL_MODULES)
    assert not loose, f"move {loose} into ops/ (use cases) or the layer package they belong to"


# What a command may import besides ops/ and cli/: the error tree and the models it shows.
# skyform.infra: the infra table, pure data a command may name (`gpus --cloud` choices)
CLI_MAY_IMPORT = ("skyform.ops", "skyform.cli", "skyform.errors", "skyform.paths", "skyform.infra")


def _command_reach(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("skyform") and not m.startswith(CLI_MAY_IMPORT)}


@pytest.mark.parametrize(
    "path", sorted((PKG / "cli" / "commands").glob("*.py")), ids=lambda p: p.name
)
def test_commands_import_only_ops_cli_and_errors(path: Path):
    reach = _command_reach(path)
    assert not reach, f"{_rel(path)} imports {sorted(reach)}: go through a use case in skyform/ops/"
