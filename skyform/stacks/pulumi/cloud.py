"""One cloud's pieces of the Pulumi engine, kept in that cloud's folder (`pulumi/<cloud>/`).

A folder holds `__init__.py` (its `CLOUD = PulumiCloud(...)`: inputs, outputs, images,
credential checks and hints — all pure), and `program.py`, the standalone Pulumi program
(the only module there importing the SDK). The engine finds a folder by the cloud's name
in the infra table (`skyform/infra.py`, engine "pulumi"), so no list of clouds lives here.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyform.errors import StackError
from skyform.infra import PULUMI
from skyform.plan.model import PlannedBucket

if TYPE_CHECKING:
    from skyform.config import Config
    from skyform.plan.model import ClusterSpec
    from skyform.stacks.health import InfraStatus


ImageLookup = Callable[[str, "str | None", str], "str | None"]  # Catalog.image_for


@dataclass(frozen=True)
class InputContext:
    """What the inputs need besides the spec (the engine and `export` fill it in)."""

    ssh_public_key: str
    ssh_key_id: str  # short id of the key, part of the AWS key pair name
    image_lookup: ImageLookup
    k8s_gpus: Mapping[str, Any] = field(default_factory=dict)  # name -> GpuInfo
    plan_digest: str | None = None
    gcp_project: str | None = None
    k8s_gke: bool | None = None  # None: guess from the context name (gke_...)
    # (context, GPU, count, cpus, memory) -> (node label, values) of the nodes that hold such a
    # pod, from the capacity discovered at plan time; None when not known
    k8s_node_label: Callable[..., tuple[str, tuple[str, ...]] | None] | None = None
    buckets: tuple[PlannedBucket, ...] = ()  # the plan's buckets (the cluster's are chosen)


def _same_id(region: str | None, raw: str) -> str:
    return raw


@dataclass(frozen=True)
class PulumiCloud:
    name: str
    inputs: Callable[[ClusterSpec, InputContext], dict]  # the program's input dict (pure)
    node_type: str  # the stack resource type of one node
    alive: frozenset[str]  # node states (see `node_state`) that count as alive
    node_state: Callable[[Mapping[str, Any]], str]  # a node resource's outputs -> its state
    default_images: Callable[[bool, bool, str | None], list[str]]  # (gpu, arm, accel) -> tags
    check: Callable[[Mapping[str, str], Path, Config], InfraStatus]  # `skyform check`'s row
    credential_patterns: tuple[str, ...]  # words of the cloud's "not logged in" errors
    credential_hint: str  # what to run when they appear
    requirements: tuple[str, ...]  # an exported project's requirements.txt (tested versions)
    export_credentials: str  # the exported README's credentials line
    node_id: Callable[[str | None, str], str] = _same_id  # (region, raw id) -> node id
    node_noun: str = "instance"  # what one node is called in the cloud's own words
    # node states it never leaves (a pod being deleted, or ended: it is not restarted): the
    # node is gone as if the stack had lost it, only a replacement brings it back
    gone_states: frozenset[str] = frozenset()
    regional_images: bool = False  # image ids differ per region (AMIs)
    container_images: bool = False  # `image_id: docker:<image>` runs that container image
    stoppable: bool = False  # the program takes a `power` input (stop/start)
    storage_inputs: Callable[[PlannedBucket, Any], dict] | None = None  # persistent bucket
    # words of "the cloud's API did not answer" (after the credential patterns), and the hint
    unreachable_patterns: tuple[str, ...] = ()
    unreachable_hint: str = ""
    # where the provider says why in more words than its error line (a warning before it)
    reason: re.Pattern[str] | None = None
    # a resource's provider id from its recorded inputs, where the cloud names objects by
    # them (Kubernetes: namespace/name): what a killed run was making is then found again
    object_id: Callable[[Mapping[str, Any]], str | None] | None = None


@cache
def pulumi_cloud(name: str) -> PulumiCloud:
    """The pieces of a cloud the Pulumi engine provisions (its folder's CLOUD)."""
    if name not in PULUMI:
        raise StackError(f"the pulumi engine does not provision {name!r} clusters")
    module = importlib.import_module(f"skyform.stacks.pulumi.{name}")
    return module.CLOUD


def program_path(name: str) -> Path:
    """The program's file (copied verbatim into an exported project's __main__.py)."""
    pulumi_cloud(name)
    return Path(__file__).resolve().parent / name / "program.py"


def program_module(name: str):
    """The cloud's standalone Pulumi program (imports the SDK: only when a stack runs)."""
    pulumi_cloud(name)
    return importlib.import_module(f"skyform.stacks.pulumi.{name}.program")


# The provider SDKs load their submodules lazily (importlib's LazyLoader, not thread-safe
# before Python 3.12): two stacks' programs declaring resources at once in one process (a
# service's replicas launched together) met `pulumi_aws.ec2` half loaded ("module
# 'pulumi_aws.ec2' has no attribute 'KeyPair'"). Programs declare one at a time; declaring
# takes milliseconds, the engine's work on the resources still runs side by side. The lock
# ends when the program returns, before the SDK serializes the resources: a program must
# load every SDK module its resources need while declaring them (tests/stacks/pulumi/
# test_inline_programs.py runs each cloud's program and checks that nothing loads later).
_DECLARING = threading.Lock()


def inline_program(register: Callable[[dict], None], inputs: dict) -> Callable[[], None]:
    """The Automation API's inline program: `register(inputs)`, one program at a time."""

    def program() -> None:
        with _DECLARING:
            register(inputs)

    return program
