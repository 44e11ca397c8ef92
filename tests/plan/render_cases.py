"""The plans the golden renderings are made of (tests/plan/test_render_golden.py), shared
with the other tests that render or read them back. Not a test module, so its name is
unique across tests/ (tests/cost has its own golden tests)."""

from __future__ import annotations

from factory import A2_SPOT, G5, P4D_SPOT, create_plan, placement, plan, spec

from skyform.plan.model import (
    Action,
    Alternative,
    AttributeChange,
    BlockedPlacement,
    ClusterChange,
    EgressFlow,
    UntouchedCluster,
)


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
    ]
    p = plan(changes, tasks, add=1, change=1, destroy=1, before=3.4775)
    return p.model_copy(
        update={
            "untouched": [
                UntouchedCluster(
                    cluster="old",
                    reason="made from this task file but not named by this plan: left as it "
                    "is (`skyform down old` removes it)",
                )
            ],
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


def review_plan():
    """What a reviewer must see: run text changed, a takeover, a name that was changed, an
    egress upper bound, and a dearer row chosen because of its inputs' egress."""
    old_run = "pip list\npython train.py \\\n  --lr 0.1 \\\n  --epochs 3\necho done"
    new_run = "pip list\npython train.py \\\n  --lr 0.01 \\\n  --epochs 3\necho done"
    near = Alternative(
        offer=G5, hourly_cost=1.006, estimated_cost=1.006, estimated_hours=1, chosen=True
    )
    far = Alternative(
        offer=A2_SPOT.model_copy(update={"hourly_price": 0.5}),
        hourly_cost=0.5,
        estimated_cost=0.5,
        estimated_hours=1,
        egress_cost=45.0,
    )
    task = placement("train-v2", offer=G5, alternatives=[near, far])
    task = task.model_copy(update={"cluster_name_from": 'the task name "train_v2"'})
    change = ClusterChange(
        cluster="train-v2",
        action=Action.UPDATE,
        before=spec("train-v2", offer=G5),
        after=spec("train-v2", offer=G5, job_digest="sha256:new"),
        reason="run changed: the job will run again",
        attributes=[AttributeChange(path="run", before=old_run, after=new_run)],
        takes_over="the task file /home/ann/other/train.yaml",
    )
    p = plan([change], [task], change=1, before=1.006)
    flow = EgressFlow(
        src_task="s3://corpus",
        dst_task="train-v2",
        gigabytes=500,
        src_infra="aws",
        dst_infra=G5.infra,
        cost=45.0,
        seconds=400,
        upper_bound=True,
    )
    return p.model_copy(update={"egress": [flow]})


CASES = {
    "review": review_plan,
    "create": create_plan,
    "mixed": mixed_plan,
    "noop": noop_plan,
    "destroy": destroy_plan,
}
