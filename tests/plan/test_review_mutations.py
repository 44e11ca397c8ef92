"""The mutation suite of issue 26: hundreds of edited plans (tests/plan/reviewmutations.py:
job text, secret names, task paths, mount destinations and env names, numbers, canonical
rewrites, control characters, names, offers), each of them either

- refused by `apply` before anything exists (exit 1; 3 for a plan its task file has moved
  away from), checked in-process through the very steps apply takes first (the loader,
  ops/apply.refuse_before_anything) and, for a deterministic sample, through the real CLI
  with nothing created in SKYFORM_HOME, beside it or in the plan's folder; or
- shown and applied exactly as shown: `show` prints it with its control characters visible,
  a change to what apply acts on (the jobs, offers, node counts, actions) changes what
  `show` prints, and a sample of those on local infra is applied for real and recorded
  as the plan says.

Run with `-s` to see the counts by class and outcome.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

from realplans import make_plans
from reviewmutations import Mutation, Specials, review_mutations

from skyform.errors import SkyformError
from skyform.ops.applier import ApplyOptions
from skyform.ops.apply import refuse_before_anything
from skyform.plan.model import Plan
from skyform.plan.planfile import read_plan

SECRET = ("--secret", "TOKEN=s3cr3t")  # the local plan's task declares it
CLI_EVERY = 9  # every 9th refusal also goes through `skyform apply` (≈30 ms each)
APPLIED = 4  # accepted plans on local infra applied for real (≈1 s each)
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
DIGESTS = re.compile(r"sha256:[0-9a-f]+")


def _specials(where: Path) -> Specials:
    fifo = where / "fifo"
    os.mkfifo(fifo)
    huge = where / "huge.yaml"
    with huge.open("wb") as f:
        f.truncate(8 * 1024**3)  # sparse
    directory = where / "folder"
    directory.mkdir()
    return Specials(fifo=fifo, huge=huge, directory=directory)


def _tree(*roots: Path) -> set[str]:
    return {str(p) for root in roots for p in root.rglob("*") if p.name != "mutated.json"}


def _acted_on(plan: Plan) -> str:
    """What apply acts on (not what is only shown or checked for staleness)."""
    return json.dumps(
        {
            "destroy": plan.destroy,
            "tasks": [
                t.model_dump(
                    mode="json",
                    include={"task", "cluster", "num_nodes", "depends_on", "offer", "job"},
                )
                for t in plan.tasks
            ],
            "changes": [
                c.model_dump(
                    mode="json",
                    include={"cluster", "action", "before", "after", "workdir_changed"},
                )
                for c in plan.changes
            ],
            "buckets": [b.model_dump(mode="json") for b in plan.buckets],
        },
        sort_keys=True,
    )


def _secrets(m: Mutation) -> list[str]:
    return list(m.flags[1::2])


def _apply_first_steps(m: Mutation, target: Path) -> Plan | SkyformError:
    """The plan as apply reads it, or the error apply refuses it with before it creates
    anything (the same calls, in-process)."""
    try:
        plan, _ = read_plan(target)
        options = ApplyOptions(secret_overrides=_secrets(m), environ={})
        refuse_before_anything(plan, target, options)
    except SkyformError as err:
        return err
    return plan


def _shown(cli, path: Path) -> str:
    result = cli("show", path)
    assert result.exit_code == 0, result.output
    found = ACTED_ON.search(result.stdout)
    assert found is None, f"show printed a raw {found.group()!r}"
    return DIGESTS.sub("sha256:…", result.stdout)


FLAGS = [  # what a plan made with other flags runs: accepted, shown, applied as shown
    ("--env", "GREETING=from-a-flag"),
    ("--env", "EXTRA=1"),
    ("--num-nodes", "2"),
]


def _flag_plans(cli, plans: dict[str, Path]) -> list[Mutation]:
    """The local plan made again with other flags: a different plan, made the honest way
    (again when its turn comes: an apply before it moves the state on)."""
    return [_made_with(cli, plans, flag) for flag in FLAGS]


def _made_with(cli, plans: dict[str, Path], flag: tuple[str, ...]) -> Mutation:
    task = plans["local"].with_name("local.yaml")
    out = task.with_name("flagged.json")
    result = cli("plan", task, *flag, *SECRET, "-o", out)
    assert result.exit_code == 0, result.output
    return Mutation("local", "plan flags", " ".join(flag), out.read_text(), SECRET)


def _refusal_exit(m: Mutation) -> int:
    """README's exit codes: 3 when the task file the plan names changed or is gone (a stale
    plan: plan again), 1 for every plan no honest `plan` could have written."""
    stale = m.label == "a missing file" or m.label.endswith("'s task file")
    return 3 if m.cls == "task path" and stale else 1


def test_every_mutation_is_refused_or_shown_and_applied_as_shown(cli, skyform_home, tmp_path):
    plans = make_plans(cli, skyform_home, tmp_path)
    mutations = review_mutations(plans, _specials(tmp_path)) + _flag_plans(cli, plans)
    originals = {kind: read_plan(path)[0] for kind, path in plans.items()}
    shown = {kind: _shown(cli, path) for kind, path in plans.items()}
    before, beside = _tree(skyform_home, tmp_path), set(os.listdir(skyform_home.parent))
    outcomes: Counter[tuple[str, str]] = Counter()
    refusals = applied = 0
    for m in mutations:
        if m.cls == "plan flags":
            m = _made_with(cli, plans, tuple(m.label.split()))
        target = plans[m.kind].with_name("mutated.json")
        target.write_text(m.text)
        found = _apply_first_steps(m, target)
        assert _tree(skyform_home, tmp_path) == before, (m.kind, m.label)
        if isinstance(found, SkyformError):
            assert found.exit_code == _refusal_exit(m), (m.kind, m.label, found.message)
            assert "internal error" not in found.message
            outcomes[m.cls, f"refused (exit {found.exit_code})"] += 1
            refusals += 1
            if refusals % CLI_EVERY == 0:
                result = cli("apply", target, "-y", *m.flags)
                assert result.exit_code == found.exit_code, (m.kind, m.label, result.output)
                assert "Traceback" not in result.output
                assert _tree(skyform_home, tmp_path) == before, (m.kind, m.label)
                assert set(os.listdir(skyform_home.parent)) == beside, (m.kind, m.label)
                outcomes[m.cls, "  also refused by `skyform apply`"] += 1
            continue
        now = _shown(cli, target)
        if _acted_on(found) == _acted_on(originals[m.kind]):
            outcomes[m.cls, "accepted: acts as the original"] += 1
            if m.cls == "canonical rewrites":
                assert now == shown[m.kind], (m.kind, m.label)
            continue
        assert now != shown[m.kind], f"{m.kind}: {m.label} changes what apply does unseen"
        outcomes[m.cls, "accepted: shown changed"] += 1
        if applied < APPLIED and {t.offer.cloud for t in found.tasks} == {"local"}:
            applied += 1
            _applied_as_shown(cli, target, found, m)
            before = _tree(skyform_home, tmp_path)
            outcomes[m.cls, "  applied for real, as shown"] += 1
    total = len(mutations)
    print(f"\n{total} mutated plans from {len(plans)} real ones:")
    for (cls, outcome), count in sorted(outcomes.items()):
        print(f"  {count:5d}  {cls}: {outcome}")
    assert total >= 300
    assert refusals >= 250 and applied == len(FLAGS)
    assert {cls for cls, _ in outcomes} == {m.cls for m in mutations}


def _applied_as_shown(cli, path: Path, plan: Plan, m: Mutation) -> None:
    """Apply for real: every cluster is recorded with the offer and job the plan showed."""
    from skyform.state.db import open_state

    result = cli("apply", path, "-y", *m.flags)
    assert result.exit_code == 0, (m.label, result.output)
    for t in plan.tasks:  # what the job printed is what show listed (the local task echoes it)
        greeting = t.job.envs["GREETING"]
        assert result.stdout.count(f"node=0) {greeting}") == 1, m.label
        assert result.stdout.count(") " + greeting + "\n") == t.num_nodes, m.label
    with open_state() as db:
        for t in plan.tasks:
            record = db.require_cluster(t.cluster)
            assert record.spec.offer == t.offer, m.label
            assert record.spec.num_nodes == t.num_nodes, m.label
            assert record.job == t.job, m.label
    for t in plan.tasks:
        assert cli("down", "-y", t.cluster).exit_code == 0
