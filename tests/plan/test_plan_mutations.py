"""The mutation suite of issue 11: thousands of edited plans, made from real ones (local with
a secret, ssh pool, aws, gcp with mounts, pipeline, DAG, destroy), and for each one:

- the loader refuses it as "corrupt or was edited" (or "not a skyform plan" / another format
  version, exit 1 too), or it reads back as exactly the original plan (an edit the canonical
  form erases: a field removed that holds its default);
- through the real CLI (`apply -y`, in-process), for a deterministic sample of every kind
  of edit: exit 1 with that message, nothing created or deleted in SKYFORM_HOME, next to
  it or in the plan's folder, and `status` still exits 0.

Run with `-s` to see the counts by outcome.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from mutations import mutations
from realplans import make_plans

from skyform.errors import PlanCorruptError, PlanFileError
from skyform.plan.planfile import parse_plan, read_plan

CLI_EVERY = 12  # every 12th refused edit also goes through `skyform apply` (≈30 ms each)
STATUS_EVERY = 10  # and every 10th of those is followed by `skyform status`


def _tree(*roots: Path) -> set[str]:
    seen = set()
    for root in roots:
        seen |= {str(p) for p in root.rglob("*") if p.name != "mutated.json"}
    return seen


def _outside(home: Path) -> set[str]:
    return {str(p) for p in home.parent.iterdir()}


def test_every_edited_plan_is_refused_or_is_the_same_plan(cli, skyform_home, tmp_path):
    plans = make_plans(cli, skyform_home, tmp_path)
    before, beside = _tree(skyform_home, tmp_path), _outside(skyform_home)
    outcomes: Counter[str] = Counter()
    per_kind: Counter[str] = Counter()
    target = tmp_path / "mutated.json"
    refused_count = 0
    for kind, path in plans.items():
        original, _ = read_plan(path)
        for label, text in mutations(json.loads(path.read_text())):
            per_kind[kind] += 1
            try:
                plan = parse_plan(text.encode(), str(target))
            except PlanCorruptError as err:
                assert "plan is corrupt or was edited" in err.message, (kind, label)
                outcomes["corrupt or edited"] += 1
                message = err.message
            except PlanFileError as err:
                assert "not a skyform plan" in err.message or "format version" in err.message
                outcomes["not a plan / other format version"] += 1
                message = err.message
            else:
                assert plan == original, f"{kind}: {label} was accepted as a different plan"
                outcomes["same plan (edit erased by the canonical form)"] += 1
                continue
            refused_count += 1
            if refused_count % CLI_EVERY:
                continue
            target.write_text(text)
            result = cli("apply", target, "-y")
            assert result.exit_code == 1, (kind, label, result.output)
            assert message in result.stderr, (kind, label)
            assert "Traceback" not in result.output
            outcomes["also refused by `skyform apply` (exit 1)"] += 1
            assert _tree(skyform_home, tmp_path) == before, (kind, label)
            assert _outside(skyform_home) == beside, (kind, label)
            if outcomes["also refused by `skyform apply` (exit 1)"] % STATUS_EVERY == 0:
                assert cli("status").exit_code == 0, (kind, label)
    status = cli("status")
    assert status.exit_code == 0 and "doomed" in status.stdout
    total = sum(per_kind.values())
    print(f"\n{total} edited plans: {dict(per_kind)}")
    for outcome, count in outcomes.most_common():
        print(f"  {count:6d}  {outcome}")
    assert total >= 300 and set(per_kind) == set(plans)
    assert outcomes["also refused by `skyform apply` (exit 1)"] >= 300
