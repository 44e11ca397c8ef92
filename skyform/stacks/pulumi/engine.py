"""PulumiEngine: the StackEngine for aws, gcp and kubernetes — one Pulumi stack per cluster.

    engine = PulumiEngine(cloud="aws", config=config, state=db)   # or stacks.engine.engine_for
    engine.plan_digest = "sha256:..."        # optional: tags/labels nodes with the plan applied
    handle = engine.up(spec, on_event=print) # create or converge; one line per resource operation
    engine.refresh(handle)                   # ClusterState: terminated/preempted nodes not alive
    engine.destroy(handle)                   # delete every resource, then the stack

Importing this module is cheap: the Automation API and the provider SDK load inside the calls.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Callable

from skyform.config import Config, load_config
from skyform.errors import InfraUnusable, StackError
from skyform.infra import BY_NAME
from skyform.plan.model import Action, ClusterSpec, PlannedBucket
from skyform.stacks.engine import ClusterState, EventSink, NodeState, StackPreview, no_events
from skyform.stacks.keys import ensure_key_pair, preview_public_key
from skyform.stacks.preview import EnginePreview
from skyform.stacks.pulumi.backend import pulumi_settings
from skyform.stacks.pulumi.cloud import inline_program, program_module, pulumi_cloud
from skyform.stacks.pulumi.context import input_context
from skyform.stacks.pulumi.errors import Operation
from skyform.stacks.pulumi.inputs import program_inputs
from skyform.stacks.pulumi.outputs import ENGINE, cluster_state, handle_from_outputs
from skyform.state.db import StateDB
from skyform.state.models import ClusterHandle, NodeHandle
from skyform.state.postgres import redact

POWER_STOPPED, POWER_RUNNING = "stopped", "running"  # the programs' optional `power` input


def require_sdks(cloud: str) -> None:
    row = BY_NAME[cloud]
    for module in [m for m in ("pulumi", row.sdk_module) if m]:
        if importlib.util.find_spec(module) is None:
            raise InfraUnusable(
                f"the Pulumi SDK for {cloud} is not installed (no module {module})",
                f"Install the extra: pip install 'skyform[{row.pip_extra}]'",
                nothing_made=True,
            )


def program_for(cloud: str, inputs: dict) -> Callable[[], None]:
    """The inline program: the same `register(cluster)` an exported project runs."""
    return inline_program(program_module(cloud).register, inputs)


def placement(spec: ClusterSpec) -> str:
    offer = spec.offer
    return (
        f"{spec.num_nodes}x {offer.instance_type}{' (spot)' if offer.spot else ''} in {offer.infra}"
    )


class PulumiEngine:
    name = ENGINE

    def __init__(
        self,
        *,
        cloud: str,
        config: Config | None = None,
        state: StateDB | None = None,
        catalog=None,
        plan_digest: str | None = None,
    ) -> None:
        pulumi_cloud(cloud)  # refuses a cloud this engine does not provision
        require_sdks(cloud)
        self.cloud = cloud
        self.config = config or load_config()
        self.state = state
        self.catalog = catalog
        self.plan_digest = plan_digest
        self.settings = pulumi_settings(self.config)

    # -- helpers ------------------------------------------------------------------------------

    def _check_cloud(self, cloud: str, cluster: str) -> None:
        if cloud != self.cloud:
            raise StackError(
                f"cluster {cluster} is on {cloud}; this engine provisions {self.cloud}"
            )

    def _settings_for(self, handle: ClusterHandle):
        """The settings the cluster was created with: its stack keeps its project."""
        project, _, _ = (handle.stack or "").rpartition("/")
        if project and project != self.settings.project:
            return dataclasses.replace(self.settings, project=project)
        return self.settings

    def _op(self, verb: str, cluster: str, where: str = "", settings=None) -> Operation:
        settings = settings or self.settings
        return Operation(
            verb=verb,
            cluster=cluster,
            stack=settings.qualified(cluster),
            cloud=self.cloud,
            backend_url=redact(settings.backend_url),  # messages never show a password
            placement=where,
            work_dir=str(settings.work_dir(cluster)),
            team=settings.team,
        )

    def program_inputs(self, desired: ClusterSpec, public_key: str | None = None) -> dict:
        """The program's input dict for a cluster (what `skyform export` writes too)."""
        self._check_cloud(desired.offer.cloud, desired.name)
        ctx = input_context(
            self.cloud,
            config=self.config,
            catalog=self.catalog,
            plan_digest=self.plan_digest,
            context_name=desired.offer.context,
            public_key=public_key,
        )
        if self.state is not None:
            ctx = dataclasses.replace(ctx, buckets=stack_buckets_of(self.state, desired.name))
        return program_inputs(desired, ctx)

    # -- StackEngine ------------------------------------------------------------------------

    def preview(self, desired: ClusterSpec) -> StackPreview:
        from skyform.stacks.pulumi import workspace

        program = program_for(self.cloud, self.program_inputs(desired))
        op = self._op("preview", desired.name, placement(desired))
        changes, detail = workspace.preview(self.settings, op, program, no_events)
        return StackPreview(cluster=desired.name, engine=self.name, changes=changes, detail=detail)

    # -- `plan --preview`: the engine's own steps, writing nothing ------------------------

    def preview_up(self, desired: ClusterSpec, *, fresh: bool = False) -> EnginePreview:
        """What `up` would do to each resource of the cluster's stack (`fresh`: to a stack
        that holds nothing, as after the destroy of a replacement)."""
        from skyform.stacks.pulumi import workspace

        inputs = self.program_inputs(desired, public_key=preview_public_key())
        op = self._op("preview", desired.name, placement(desired))
        fresh = fresh or not workspace.stack_exists(self.settings, op)
        return workspace.preview_planned(
            self.settings, op, program_for(self.cloud, inputs), fresh=fresh
        )

    def preview_destroy(self, handle: ClusterHandle) -> EnginePreview:
        """What `destroy` would delete."""
        from skyform.stacks.pulumi import workspace

        self._check_cloud(handle.offer.cloud, handle.name)
        settings = self._settings_for(handle)
        op = self._op("preview", handle.name, settings=settings)
        return workspace.preview_destroy_planned(settings, op)

    def up(self, desired: ClusterSpec, on_event: EventSink = no_events) -> ClusterHandle:
        from skyform.stacks.pulumi import workspace

        program = program_for(self.cloud, self.program_inputs(desired))
        op = self._op("up", desired.name, placement(desired))
        outputs = workspace.up(self.settings, op, program, on_event)
        return handle_from_outputs(
            desired,
            outputs,
            identity_file=str(ensure_key_pair().private_path),
            stack=self.settings.qualified(desired.name),
        )

    def refresh(self, handle: ClusterHandle) -> ClusterState:
        from skyform.stacks.pulumi import workspace

        self._check_cloud(handle.offer.cloud, handle.name)
        settings = self._settings_for(handle)
        op = self._op("refresh", handle.name, settings=settings)
        resources = workspace.refresh(settings, op, no_events)
        if resources is None:
            gone = [
                NodeState(rank=n.rank, node_id=n.node_id, alive=False, detail="no stack", gone=True)
                for n in handle.nodes
            ]
            return ClusterState(name=handle.name, exists=False, nodes=gone)
        return cluster_state(handle, resources)

    def destroy(self, handle: ClusterHandle, on_event: EventSink = no_events) -> None:
        from skyform.stacks.pulumi import workspace

        self._check_cloud(handle.offer.cloud, handle.name)
        settings = self._settings_for(handle)
        op = self._op("destroy", handle.name, settings=settings)
        if workspace.destroy(settings, op, on_event):
            on_event(f"removed stack {op.stack}")
        else:
            on_event(f"stack {op.stack} does not exist: nothing to destroy")

    def preempt(self, handle: ClusterHandle, nodes: list[NodeHandle], on_event: EventSink):
        """Cloud nodes are not touched: the cloud's own fault injection (AWS FIS) does it."""
        raise StackError(f"the pulumi engine does not preempt {handle.offer.infra} nodes")

    # -- stop / start (aws, gcp): the same program with the instances' power state ----------

    def _power(self, spec: ClusterSpec, handle: ClusterHandle, power: str, on_event) -> dict:
        from skyform.stacks.pulumi import workspace

        if not pulumi_cloud(self.cloud).stoppable:
            raise StackError(f"{self.cloud} clusters cannot be stopped, only torn down")
        self._check_cloud(handle.offer.cloud, handle.name)
        settings = self._settings_for(handle)
        inputs = {**self.program_inputs(spec), "power": power}
        op = self._op("stop" if power == POWER_STOPPED else "start", spec.name, placement(spec))
        return workspace.up(settings, op, program_for(self.cloud, inputs), on_event)

    def stop(self, spec: ClusterSpec, handle: ClusterHandle, on_event: EventSink = no_events):
        """Stop the instances, keep their disks; the stack records them stopped."""
        self._power(spec, handle, POWER_STOPPED, on_event)

    def start(
        self, spec: ClusterSpec, handle: ClusterHandle, on_event: EventSink = no_events
    ) -> ClusterHandle:
        """Run them again (same zone, same disks); their addresses may be new."""
        outputs = self._power(spec, handle, POWER_RUNNING, on_event)
        return handle_from_outputs(
            spec,
            outputs,
            identity_file=str(ensure_key_pair().private_path),
            stack=self._settings_for(handle).qualified(spec.name),
        )


def make(
    cloud: str, *, config: Config, state: StateDB, plan_digest: str | None = None
) -> PulumiEngine:
    return PulumiEngine(cloud=cloud, config=config, state=state, plan_digest=plan_digest)


def stack_buckets_of(db: StateDB, cluster: str) -> tuple[PlannedBucket, ...]:
    """The buckets apply left to this cluster's stack (state/buckets.py), as the inputs take
    them: created for this cluster, ephemeral."""
    from skyform.state.buckets import stack_buckets

    return tuple(
        PlannedBucket(
            name=b.name,
            store=b.store,
            region=b.region,
            action=Action.CREATE,
            persistent=False,
            created_by_skyform=True,
            used_by=[cluster],
        )
        for b in stack_buckets(db, cluster)
    )
