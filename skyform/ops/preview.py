"""`skyform plan --preview`: per cluster of a plan, the engine's own preview of what `apply`
would do to its resources now, as `terraform plan` lists resources.

Display only, never part of the plan: a preview depends on the engine and on the live
infrastructure, so the plan file stays what its inputs make (same inputs, same bytes), its
digest does not cover the preview, and `apply` runs the engine again (as `terraform apply`
of a saved plan re-checks). The engine previews exactly what apply would run: `up` with the
plan's digest for a cluster it creates or updates through its stack, `destroy` for one it
deletes, both for one it replaces (the stack is destroyed, then made anew). A cluster
whose stack apply leaves alone, and local and ssh clusters (no engine), are said so. When
the engine cannot preview (no CLI, no provider) the preview says why in the engine's words,
and planning goes on. A Kubernetes API server that does not answer, or refuses the context's
credentials, stops no preview: the provider then previews from the program and the stack's
state alone and says nothing; so the context's API is asked first (as `apply` asks it) and
the preview says why it is absent. No stack, SSH key or passphrase is made: a new stack is
previewed in a scratch backend, and the nodes' key is skyform's or one held in memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from skyform.errors import SkyformError
from skyform.frozen import Frozen
from skyform.infra import BY_NAME, PULUMI, updates_in_place
from skyform.plan.model import Action
from skyform.stacks.preview import EnginePreview, ResourceStep, StepOp

if TYPE_CHECKING:
    from skyform.config import Config
    from skyform.plan.catalog import Catalog
    from skyform.plan.model import ClusterChange, PlacedOffer, Plan
    from skyform.state.db import StateDB
    from skyform.state.models import ClusterHandle, ClusterRecord

Status = Literal["previewed", "incomplete", "unavailable", "no-engine", "not-run"]


class ClusterPreview(Frozen):
    """One cluster's engine preview. `status`: previewed (the steps are all of it),
    incomplete (the engine failed after these steps: `reason`), unavailable (no preview:
    `reason`), no-engine (local, ssh), not-run (apply leaves the stack alone: `reason`)."""

    cluster: str
    infra: str
    action: Action  # the plan's action on the cluster
    status: Status
    reason: str = ""
    steps: list[ResourceStep] = []
    unchanged: int = 0

    def count(self, op: StepOp) -> int:
        return sum(1 for s in self.steps if s.op == op)


def engine_previews(plan: Plan) -> list[ClusterPreview]:
    """The engine preview of every cluster the plan acts on, in the plan's order."""
    from skyform.config import load_config
    from skyform.plan.catalog import load_catalog
    from skyform.plan.planjson import content_digest
    from skyform.state.store import open_state, state_exists

    config = load_config()
    catalog = load_catalog(config)
    digest = content_digest(plan)  # what apply tags the resources with
    if not state_exists():
        return [_preview(c, None, None, config, catalog, digest) for c in plan.changes]
    with open_state() as db:
        return [
            _preview(c, db.get_cluster(c.cluster), db, config, catalog, digest)
            for c in plan.changes
        ]


def _preview(
    change: ClusterChange,
    record: ClusterRecord | None,
    db: StateDB | None,
    config: Config,
    catalog: Catalog,
    digest: str,
) -> ClusterPreview:
    spec = change.after or change.before
    assert spec is not None
    cloud = spec.offer.cloud

    def said(status: Status, reason: str = "", found: EnginePreview | None = None):
        steps, unchanged = (found.steps, found.unchanged) if found is not None else ([], 0)
        return ClusterPreview(
            cluster=change.cluster,
            infra=spec.offer.infra,
            action=change.action,
            status=status,
            reason=reason,
            steps=steps,
            unchanged=unchanged,
        )

    held = record.handle if record is not None else None
    old = held if held is not None and held.offer.cloud in PULUMI else None
    if cloud not in PULUMI and old is None:
        return said(
            "no-engine", f"no engine: {BY_NAME[cloud].engine if cloud in BY_NAME else cloud}"
        )
    why_not = _not_run(change, record)
    if why_not:
        return said("not-run", why_not)
    offers = [s.offer for s in (change.before, change.after) if s is not None]
    unusable = next(filter(None, (_api_unusable(o, catalog) for o in offers)), "")
    if unusable:
        return said("unavailable", unusable)
    try:
        found = _engine_steps(change, old, db, config, digest)
    except SkyformError as err:
        return said("unavailable", err.message)
    return said("incomplete" if found.failure else "previewed", found.failure, found)


def _not_run(change: ClusterChange, record: ClusterRecord | None) -> str:
    """Why apply leaves the cluster's stack as it is ("" when it runs the engine)."""
    from skyform.plan.effects import stack_updates
    from skyform.state.models import ClusterStatus

    if change.action is Action.NOOP:
        return "no changes: apply leaves its stack as it is"
    if change.action is not Action.UPDATE or change.after is None:
        return ""
    if record is None or record.status is ClusterStatus.INIT:
        return ""  # apply converges it: the stack is brought up
    if stack_updates(change) and updates_in_place(change.after.offer.cloud):
        return ""
    return "the update is the job's, not the infrastructure's: apply leaves its stack as it is"


def _api_unusable(offer: PlacedOffer, catalog: Catalog) -> str:
    """Why the Kubernetes context an offer is on cannot be used now ("" when it can), read
    again from its API server as `apply` reads it."""
    row = BY_NAME.get(offer.cloud)
    if row is None or row.engine != "pulumi" or not row.context_scoped or not offer.context:
        return ""
    found = catalog.kubernetes.planned(offer.context, refresh=True).get(offer.context)
    if found is not None and found.usable:
        return ""
    why = found.error if found is not None else "it is not in the kubeconfig"
    return (
        f"context {offer.context} cannot be used now ({why}); without its API server the "
        "engine would preview from the program and the stack's state alone"
    )


def _engine_steps(
    change: ClusterChange,
    old: ClusterHandle | None,
    db: StateDB | None,
    config: Config,
    digest: str,
) -> EnginePreview:
    from skyform.stacks.pulumi.engine import PulumiEngine

    def engine(cloud: str) -> PulumiEngine:
        return PulumiEngine(cloud=cloud, config=config, state=db, plan_digest=digest)

    new = change.after if change.action is not Action.DELETE else None
    if new is not None and new.offer.cloud not in PULUMI:
        new = None
    deleting = change.action in (Action.DELETE, Action.REPLACE)
    deleted = engine(old.offer.cloud).preview_destroy(old) if deleting and old is not None else None
    made = (
        engine(new.offer.cloud).preview_up(new, fresh=change.action is Action.REPLACE)
        if new is not None
        else None
    )
    if deleted is None:
        return made or EnginePreview()
    if made is None:
        return deleted
    return replaced(deleted, made)


def replaced(deleted: EnginePreview, made: EnginePreview) -> EnginePreview:
    """A replacement as apply makes it, the stack destroyed then made anew: a resource in
    both is replaced, the others are deleted or created."""
    created = {(s.type, s.name): s for s in made.steps}
    steps = []
    for step in deleted.steps:
        twin = created.pop((step.type, step.name), None)
        steps.append(step if twin is None else twin.model_copy(update={"op": "replace"}))
    steps += created.values()
    return EnginePreview(
        steps=sorted(steps, key=lambda s: (s.type, s.name, s.urn)),
        failure="; ".join(f for f in (deleted.failure, made.failure) if f),
    )
