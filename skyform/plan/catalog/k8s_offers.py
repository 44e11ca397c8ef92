"""The catalog's Kubernetes side: offers from discovered capacity, and why there are none.

`KubernetesOffers.rows` answers a catalog query for Kubernetes: one row per planned context
whose nodes can hold the requested pod (kubernetes.py describes the row). Every context a
query could not use is remembered with the reason (`misses`), so the plan and "no offer"
errors can say why Kubernetes was not chosen: no kubeconfig, context unreachable, no node fits.

Scope (which contexts a plan depends on) is written like infra: `kubernetes` (every planned
context) or `kubernetes/NAME`. `snapshot(scope)` is the plan's provenance for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from skyform.plan.catalog.k8s_capacity import (
    ContextCapacity,
    KubernetesCapacity,
    KubernetesSnapshot,
)

if TYPE_CHECKING:
    from skyform.plan.catalog.k8s_nodes import GpuNaming
from skyform.plan.catalog.kubernetes import (
    GpuInfo,
    KubernetesPricing,
    kubernetes_offer_row,
    pod_for,
)
from skyform.plan.catalog.offer import format_count

CLOUD = "kubernetes"


def scope_entry(context: str | None) -> str:
    return f"{CLOUD}/{context}" if context else CLOUD


def scope_context(entry: str) -> str | None:
    return entry.split("/", 1)[1] if "/" in entry else None


def kubernetes_scope(requests: Iterable[Any], clouds: Iterable[str]) -> list[str]:
    """The scope of resource requests: those naming Kubernetes, and those naming no infra when
    `clouds` (config's plan.clouds) has it."""
    implicit = CLOUD in set(clouds)
    scope: set[str] = set()
    for request in requests:
        if request.cloud == CLOUD:
            scope.add(scope_entry(request.context or request.region))
        elif request.cloud is None and implicit:
            scope.add(CLOUD)
    return sorted(scope)


class KubernetesOffers:
    def __init__(
        self,
        pricing: KubernetesPricing,
        gpus: dict[str, GpuInfo],
        capacity: KubernetesCapacity | None,
        canonical: Callable[[str], str | None],
        instance_gpu: Callable[[str], tuple[str, float] | None],
    ) -> None:
        self.pricing = pricing
        self.gpus = gpus
        self.capacity = capacity
        self._canonical = canonical
        self._instance_gpu = instance_gpu
        self._naming: GpuNaming | None = None
        # pod -> {context: why it does not fit}, for pods that fit no planned context
        self._misses: dict[str, dict[str, str]] = {}
        self._placed: set[str] = set()  # pods that fit somewhere

    @property
    def naming(self) -> GpuNaming:
        """How node labels name GPUs (built when a context's nodes are first read)."""
        if self._naming is None:
            from skyform.plan.catalog.k8s_nodes import GpuNaming

            gpus = self.gpus
            self._naming = GpuNaming(
                canonical=self._canonical,
                known=tuple(gpus),
                memory_gib=lambda name: gpus[name].memory_gib if name in gpus else None,
                instance_gpu=self._instance_gpu,
            )
        return self._naming

    # --- queries ---------------------------------------------------------------------------

    def rows(
        self,
        context: str | None,
        cpus: float | None,
        memory: float | None,
        accelerator: str | None,
        count: float | None,
        min_count: float | None,
    ) -> list[tuple]:
        if accelerator is None and ((count or 0) > 0 or (min_count or 0) > 0):
            return []  # "N accelerators of any type": which GPU would the pod ask for?
        wanted = count if count is not None else (min_count if min_count is not None else 1.0)
        pod = pod_for(
            self._canonical,
            cpus=cpus,
            memory=memory,
            accelerator=accelerator,
            count=float(wanted) if accelerator else 0.0,
        )
        if pod is None:
            return []
        from skyform.plan.catalog.k8s_nodes import fit

        found = []
        words = _pod_words(pod)
        for name, ctx in self.planned(context).items():
            if not ctx.usable:
                continue
            placed = fit(ctx.types, pod.cpus, pod.memory, pod.accelerator, pod.accelerator_count)
            if isinstance(placed, str):
                self._misses.setdefault(words, {})[name] = placed
                continue
            found.append(kubernetes_offer_row(self.pricing, name, pod, placed))
        if found:
            self._placed.add(words)
        return found

    def planned(self, context: str | None, *, refresh: bool = False) -> dict[str, ContextCapacity]:
        """The capacity of the contexts a request for `context` (None: any) plans on."""
        if self.capacity is None:
            return {}
        selection = self.capacity.select(context)
        return self.capacity.contexts(selection.contexts, self.naming, refresh=refresh)

    def selector(
        self,
        context: str,
        accelerator: str | None,
        count: float,
        cpus: float | None,
        memory: float | None,
    ) -> tuple[str, tuple[str, ...]] | None:
        """(label key, values) that put a GPU pod on nodes that hold it, from the discovered
        nodes; None when the context's nodes are not known."""
        if not accelerator or cpus is None or memory is None:
            return None
        ctx = self.planned(context).get(context)
        if ctx is None or not ctx.usable:
            return None
        from skyform.plan.catalog.k8s_nodes import fit

        placed = fit(ctx.types, cpus, memory, accelerator, count)
        return None if isinstance(placed, str) else placed.selector

    # --- provenance ------------------------------------------------------------------------

    def snapshot(self, scope: Iterable[str], *, refresh: bool = False) -> KubernetesSnapshot:
        """What the contexts in `scope` have now, and why any is not considered."""
        entries = tuple(sorted(set(scope)))
        contexts: dict[str, ContextCapacity] = {}
        notes: list[str] = []
        for entry in entries:
            if self.capacity is None:
                notes.append("Kubernetes capacity is not discovered for this catalog")
                continue
            selection = self.capacity.select(scope_context(entry))
            notes += selection.notes
            found = self.capacity.contexts(selection.contexts, self.naming, refresh=refresh)
            contexts.update(found)
        for name, ctx in sorted(contexts.items()):
            if not ctx.usable:
                notes.append(f"context {name} is {ctx.summary()}")
            notes += [f"context {name}: {note}" for note in ctx.notes]
        ordered = tuple(contexts[name] for name in sorted(contexts))
        return KubernetesSnapshot(entries, ordered, tuple(dict.fromkeys(notes)))

    def why_not(self, scope: Iterable[str]) -> list[str]:
        """Everything that kept Kubernetes offers out for `scope`, as sentences."""
        return [*self.snapshot(scope).notes, *self.miss_notes()]

    def miss_notes(self) -> list[str]:
        """Why each pod the queries asked for fits no planned context (one line per pod)."""
        notes = []
        for words, reasons in sorted(self._misses.items()):
            if words not in self._placed:
                why = "; ".join(f"{ctx}: {reason}" for ctx, reason in sorted(reasons.items()))
                notes.append(f"no context fits a {words}: {why}")
        return notes


def _pod_words(pod) -> str:
    text = f"{format_count(pod.cpus)} CPU, {format_count(pod.memory)} GiB"
    if pod.accelerator:
        text = f"{pod.accelerator}:{format_count(pod.accelerator_count)}, " + text
    return f"pod ({text})"
