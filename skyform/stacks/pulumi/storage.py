"""Storage stacks: a bucket on aws/gcp that must outlive a cluster's stack is a Pulumi stack of
its own, one per bucket, in the project `<project>-storage`, named `<store>-<bucket>`.

One stack per bucket (not one per project) because each bucket has its own life: `storage
delete NAME` destroys exactly that stack, two applies that create different buckets never
wait for each other's stack lock, and a failed update can only touch one bucket. The project
suffix keeps these stacks apart from the clusters' (a cluster may be called `s3-data`).

    stacks = StorageStacks(config, plan_digest="sha256:...")
    stacks.up(bucket, keep=True, on_event=print)   # persistent: protected, never emptied
    stacks.destroy(record_stack, bucket, on_event=print)  # unprotect + empty, then destroy

Importing this module is cheap: the Automation API and the provider SDK load inside calls.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable

from skyform.config import Config
from skyform.infra import OBJECT_STORES
from skyform.plan.model import PlannedBucket
from skyform.stacks.engine import EventSink, no_events
from skyform.stacks.pulumi.backend import PulumiBackend, pulumi_settings
from skyform.stacks.pulumi.cloud import InputContext, inline_program
from skyform.stacks.pulumi.errors import Operation
from skyform.stacks.pulumi.inputs import storage_inputs

STORE_CLOUD = {store: cloud for cloud, store in OBJECT_STORES.items()}


def storage_project(config: Config | None = None) -> PulumiBackend:
    settings = pulumi_settings(config)
    return dataclasses.replace(settings, project=settings.project + "-storage")


def stack_name(store: str, bucket: str) -> str:
    return f"{store}-{bucket}"


class StorageStacks:
    def __init__(self, config: Config, plan_digest: str | None = None) -> None:
        self.config = config
        self.plan_digest = plan_digest
        self.settings = storage_project(config)

    def qualified(self, bucket: PlannedBucket) -> str:
        return self.settings.qualified(stack_name(bucket.store, bucket.name))

    def inputs(self, bucket: PlannedBucket, *, keep: bool) -> dict:
        project = None
        if bucket.store == "gcs":
            from skyform.stacks.pulumi.context import gcp_project

            project = gcp_project()
        # a storage stack has no nodes: no SSH key and no image to look up
        ctx = InputContext(
            ssh_public_key="",
            ssh_key_id="",
            image_lookup=lambda *_: None,
            plan_digest=self.plan_digest,
            gcp_project=project,
        )
        return storage_inputs(bucket, ctx, keep=keep)

    def program(self, bucket: PlannedBucket, *, keep: bool) -> Callable[[], None]:
        """The inline program (what an exported storage project's `__main__.py` runs)."""
        cloud = STORE_CLOUD[bucket.store]
        inputs = self.inputs(bucket, keep=keep)
        module = importlib.import_module(f"skyform.stacks.pulumi.{cloud}.program")
        return inline_program(module.register_storage, inputs)

    def _op(self, verb: str, bucket: PlannedBucket) -> Operation:
        name = stack_name(bucket.store, bucket.name)
        return Operation(
            verb=verb,
            cluster=name,
            stack=self.settings.qualified(name),
            cloud=STORE_CLOUD[bucket.store],
            backend_url=self.settings.backend_url,
            placement=f"bucket {bucket.uri} in {bucket.region}",
            work_dir=str(self.settings.work_dir(name)),
        )

    def up(self, bucket: PlannedBucket, *, keep: bool, on_event: EventSink = no_events) -> str:
        """Create (or converge) the bucket's stack; its qualified name."""
        from skyform.stacks.pulumi import workspace
        from skyform.stacks.pulumi.engine import require_sdks

        require_sdks(STORE_CLOUD[bucket.store])
        program = self.program(bucket, keep=keep)
        workspace.up(self.settings, self._op("up", bucket), program, on_event)
        return self.qualified(bucket)

    def destroy(self, bucket: PlannedBucket, on_event: EventSink = no_events) -> bool:
        """Delete the bucket with its objects, then its stack; False when there was no stack.

        A kept bucket is protected and not force-destroyable: one update lifts both (the
        Terraform way: change the configuration, then destroy), then the stack goes."""
        from skyform.stacks.pulumi import workspace
        from skyform.stacks.pulumi.engine import require_sdks

        require_sdks(STORE_CLOUD[bucket.store])
        op = self._op("destroy", bucket)
        if workspace.open_stack(self.settings, op, None, create=False) is None:
            return False
        program = self.program(bucket, keep=False)
        workspace.up(self.settings, self._op("up", bucket), program, on_event)
        return workspace.destroy(self.settings, op, on_event)
