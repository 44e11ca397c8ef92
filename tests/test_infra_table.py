"""The infra table is the one place that names clouds together (skyform/infra.py).

Checked on the source: no tuple, list, set or dict literal of two or more infra names outside
the table, and the table is a leaf (it imports nothing from skyform)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import source_imports

from skyform.infra import NAMES, TABLE

PKG = Path(__file__).resolve().parents[1] / "skyform"
SOURCES = [p for p in sorted(PKG.rglob("*.py")) if p.name != "infra.py" or p.parent != PKG]
# Places where names that happen to be infra names are data, not a capability list:
ALLOWED = {
    "skyform/spec/infra.py": "SkyPilot's list of every cloud it knows (they parse, ours run)",
    "skyform/stacks/registry.py": "engine names: the local and ssh infra share their engine's name",
    "skyform/plan/catalog/onprem.py": "the digest payload of the local and ssh offer sources",
}


def _rel(path: Path) -> str:
    return path.relative_to(PKG.parent).as_posix()


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Dict):
        items = [k for k in node.keys if k is not None]
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        items = list(node.elts)
    else:
        return []
    return [i.value for i in items if isinstance(i, ast.Constant) and i.value in NAMES]


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_no_list_of_clouds_outside_the_table(path: Path):
    if _rel(path) in ALLOWED:
        return
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        found = _names(node)
        assert len(found) < 2, (
            f"{_rel(path)}:{node.lineno} lists clouds {found}: read skyform/infra.py instead"
        )


def test_the_table_is_a_leaf():
    imported = {m for m, _ in source_imports(PKG / "infra.py") if m.startswith("skyform")}
    assert imported == set()


def test_every_row_names_a_registered_engine_and_an_sdk_with_its_extra():
    from skyform.stacks.registry import ENGINES

    for row in TABLE:
        assert row.engine in ENGINES, row.name
        assert (row.sdk_module is None) == (row.pip_extra is None), row.name


def test_check_reports_every_infra_of_the_table(skyform_home, monkeypatch, tmp_path):
    """`skyform check` walks the table: a row per infra (ssh: one per pool), then the
    engines' own tools (the pulumi CLI)."""
    from skyform.config import Config
    from skyform.ops.check import check_all

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    pool = {"hosts": [{"host": "127.0.0.1", "port": 1}]}
    config = Config.model_validate({"ssh_pools": {"lab": pool}})
    names = [s.name for s in check_all(config, env={"HOME": str(tmp_path)})]
    expected = [("ssh/lab" if r.name == "ssh" else r.name) for r in TABLE if r.on_prem]
    expected += [r.name for r in TABLE if not r.on_prem] + ["pulumi"]
    assert names == expected


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.name)
def test_stop_is_refused_exactly_where_the_table_says(row):
    from skyform.infra import Stop
    from skyform.plan.autostop import why_not_stoppable
    from skyform.plan.model import PlacedOffer

    for spot in (False, True):
        offer = PlacedOffer(
            cloud=row.name, region="r", zone=None, instance_type="t", spot=spot, hourly_price=1.0
        )
        refused = row.stop is Stop.NONE or (spot and not row.spot_stops)
        assert (why_not_stoppable(offer) is not None) is refused, (row.name, spot)
