"""Golden renderings of plans: Terraform-style text (no colour, 100 columns) and markdown.

Regenerate after an intended change with UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from factory import A2_SPOT, G5, P4D_SPOT, create_plan, placement, plan, spec

from skyform.cli.render.console import plain_console
from skyform.cli.render.plan import render_plan
from skyform.cli.render.plan_markdown import render_plan_markdown
from skyform.plan.model import (
    Action,
    AttributeChange,
    BlockedPlacement,
    ClusterChange,
    EgressFlow,
)

GOLDEN = Path(__file__).parent / "golden"


def mixed_plan():
    tasks = [placement("train", offer=A2_SPOT), placement("serve", offer=G5, index=1)]
    changes = [
        ClusterChange(
            cluster="train",
            action=Action.REPLACE,
            before=spec(),
            after=spec(offer=A2_SPOT),
            reason="infra aws/us-east-1/use1-az1 → gcp/us-central1/us-central1-a "
            "forces replacement",
            attributes=[
                AttributeChange(
                    path="infra",
                    before=P4D_SPOT.infra,
                    after=A2_SPOT.infra,
                    forces_replacement=True,
                ),
                AttributeChange(
                    path="instance_type",
                    before="p4d.24xlarge",
                    after="a2-highgpu-8g",
                    forces_replacement=True,
                ),
            ],
        ),
        ClusterChange(
            cluster="serve",
            action=Action.UPDATE,
            before=spec("serve", offer=G5),
            after=spec("serve", offer=G5, job_digest="sha256:new"),
            reason="the job changed (run, envs, workdir or file mounts): it will run again",
            attributes=[
                AttributeChange(path="job", before="sha256:" + "b" * 64, after="sha256:new")
            ],
        ),
        ClusterChange(
            cluster="old",
            action=Action.DELETE,
            before=spec("old", offer=G5),
            reason="no longer in train.yaml",
        ),
    ]
    p = plan(changes, tasks, add=1, change=1, destroy=2, before=3.4775)
    return p.model_copy(
        update={
            "blocked": [BlockedPlacement(cloud="aws", region="us-east-1", reason="preempted")],
            "egress": [
                EgressFlow(
                    src_task="train",
                    dst_task="serve",
                    gigabytes=50,
                    src_infra=A2_SPOT.infra,
                    dst_infra=G5.infra,
                    cost=6.0,
                    seconds=40,
                )
            ],
        }
    )


def noop_plan():
    return plan(
        [
            ClusterChange(
                cluster="train",
                action=Action.NOOP,
                reason="up to date",
                before=spec(),
                after=spec(),
            )
        ],
        [placement()],
    )


def destroy_plan():
    return plan(
        [
            ClusterChange(
                cluster="train", action=Action.DELETE, before=spec(), reason="destroy requested"
            )
        ],
        [],
        destroy=1,
        destroy_plan=True,
    )


CASES = {
    "create": create_plan,
    "mixed": mixed_plan,
    "noop": noop_plan,
    "destroy": destroy_plan,
}


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    text = "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden {path}; run with UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("case", sorted(CASES))
def test_human_rendering(case):
    console = plain_console(100)
    render_plan(CASES[case](), console, saved_to="plan.json")
    _check(f"{case}.txt", console.file.getvalue())


@pytest.mark.parametrize("case", sorted(CASES))
def test_markdown_rendering(case):
    _check(f"{case}.md", render_plan_markdown(CASES[case]()))


def test_legend_lists_only_symbols_used():
    console = plain_console(100)
    render_plan(create_plan(), console)
    out = console.file.getvalue()
    assert "  + create" in out
    assert "update in-place" not in out and "destroy" not in out.split("Plan:")[0]
