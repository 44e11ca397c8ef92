"""One row per infra skyform runs on: what it is and what it can do. Pure data, a leaf.

Every "which clouds can ..." question in skyform reads this table; nothing else names a
list of clouds. Adding a cloud is one row here, one folder under `stacks/pulumi/`, one
Pulumi program there and its catalog data (CONTRIBUTING.md, "How to add a cloud").
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Stop(str, Enum):
    """What `skyform stop` does to a cluster's nodes."""

    INSTANCES = "instances"  # the engine powers the machines off; disks stay, billing stops
    PROCESSES = "processes"  # the cluster's jobs end; the hosts and their files stay
    NONE = "none"  # only `down`: there is nothing to stop


@dataclass(frozen=True)
class InfraKind:
    name: str  # the cloud id in offers, task files (`infra:`), state and `check`
    engine: str  # the stacks registry's name for the engine that provisions it
    priced: bool  # offers come from the price catalog (and are planned on by default)
    on_prem: bool  # existing machines: nothing is bought; a lost cluster's live nodes stay
    stop: Stop
    cannot_stop: str  # why a stop is refused (stop NONE), in SkyPilot's words
    updates_in_place: bool  # an infra change goes through the engine (a stack update)
    preempt_on_purpose: bool  # `skyform debug preempt` can take its nodes away
    context_scoped: bool  # `infra: NAME/CONTEXT` names a context (k8s) or pool (ssh)
    pip_extra: str | None = None  # `pip install 'skyform[EXTRA]'` brings its SDK
    sdk_module: str | None = None  # the provider SDK the engine imports (None: none needed)
    object_store: str | None = None  # the bucket store of its own (s3, gcs)
    # its nodes reach that store as themselves (an instance profile, a service account):
    # rclone on them uses it. Elsewhere (a pod, an ssh host) with this machine's keys.
    node_identity: bool = False
    spot_stops: bool = True  # spot instances can be stopped too (AWS: no)
    # priced infra: its VM price table in SkyPilot's catalog layout (the bundle keeps
    # `aws/vms.csv` as `aws_vms.csv`), and how its rows become offers: "plain" (a row is an
    # instance type with its accelerators), "gcp" (accelerators priced apart, paired with
    # host machines through gcp_accelerator_hosts.csv; TPU rows are offers of their own)
    vm_catalog: str | None = None
    catalog_layout: str = "plain"

    def why_not_stoppable(self, spot: bool) -> str | None:
        if self.stop is Stop.NONE:
            return self.cannot_stop
        if spot and not self.spot_stops:
            return self.cannot_stop
        return None


TABLE: tuple[InfraKind, ...] = (
    InfraKind(
        name="aws",
        engine="pulumi",
        priced=True,
        on_prem=False,
        stop=Stop.INSTANCES,
        cannot_stop="AWS cannot stop spot instances (as in SkyPilot)",
        updates_in_place=True,
        preempt_on_purpose=False,
        context_scoped=False,
        pip_extra="aws",
        sdk_module="pulumi_aws",
        object_store="s3",
        node_identity=True,
        spot_stops=False,
        vm_catalog="aws/vms.csv",
    ),
    InfraKind(
        name="gcp",
        engine="pulumi",
        priced=True,
        on_prem=False,
        stop=Stop.INSTANCES,
        cannot_stop="",
        updates_in_place=True,
        preempt_on_purpose=False,
        context_scoped=False,
        pip_extra="gcp",
        sdk_module="pulumi_gcp",
        object_store="gcs",
        node_identity=True,
        vm_catalog="gcp/vms.csv",
        catalog_layout="gcp",
    ),
    InfraKind(
        name="kubernetes",
        engine="pulumi",
        priced=False,
        on_prem=False,
        stop=Stop.NONE,
        cannot_stop="Kubernetes pods cannot be stopped and resumed (as in SkyPilot)",
        updates_in_place=True,
        preempt_on_purpose=False,
        context_scoped=True,
        pip_extra="kubernetes",
        sdk_module="pulumi_kubernetes",
    ),
    InfraKind(
        name="ssh",
        engine="ssh",
        priced=False,
        on_prem=True,
        stop=Stop.PROCESSES,
        cannot_stop="",
        updates_in_place=False,
        preempt_on_purpose=True,
        context_scoped=True,
    ),
    InfraKind(
        name="local",
        engine="local",
        priced=False,
        on_prem=True,
        stop=Stop.NONE,
        cannot_stop="a local cluster's nodes are directories on this machine: there is nothing "
        "to stop, only to tear down",
        updates_in_place=False,
        preempt_on_purpose=True,
        context_scoped=False,
    ),
)

BY_NAME: dict[str, InfraKind] = {row.name: row for row in TABLE}
NAMES: tuple[str, ...] = tuple(BY_NAME)
PRICED: tuple[str, ...] = tuple(r.name for r in TABLE if r.priced)
UNPRICED: tuple[str, ...] = tuple(r.name for r in TABLE if not r.priced)
ON_PREM: tuple[str, ...] = tuple(r.name for r in TABLE if r.on_prem)
CONTEXT_SCOPED: tuple[str, ...] = tuple(r.name for r in TABLE if r.context_scoped)
PULUMI: tuple[str, ...] = tuple(r.name for r in TABLE if r.engine == "pulumi")
OBJECT_STORES: dict[str, str] = {r.name: r.object_store for r in TABLE if r.object_store}


def infra(name: str) -> InfraKind | None:
    """The row for a cloud id, or None for infra skyform does not run on."""
    return BY_NAME.get(name)


def is_on_prem(name: str) -> bool:
    row = BY_NAME.get(name)
    return row is not None and row.on_prem


def updates_in_place(name: str) -> bool:
    row = BY_NAME.get(name)
    return row is not None and row.updates_in_place


def infra_path(cloud: str, region: str, zone: str | None, context: str | None) -> str:
    """Where an offer runs, as task YAML writes infra: `aws/us-east-1/use1-az4`,
    `ssh/lab/west/west-a`, `kubernetes/my-context`, `local`."""
    if cloud == "local":
        return "local"
    parts = [cloud]
    if cloud == "ssh" and context:
        parts.append(context)
        if region == context and zone in (None, region):
            return "/".join(parts)  # a pool without region labels: `infra: ssh/lab`, as written
    parts.append(region)
    if zone and zone != region:
        parts.append(zone)
    return "/".join(parts)
