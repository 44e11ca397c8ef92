"""`NoOffersError` for a task nothing fits, with the nearest feasible alternatives.

Each request of the task is relaxed one constraint at a time — other accelerator counts, other
zones / regions / clouds, on-demand instead of spot (or the reverse), no max_hourly_cost, no
cpus / memory minimum, any instance type, fewer nodes (ssh pools), blocked placements allowed —
and the cheapest offer each relaxation finds is reported with its price.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skyform.errors import NoOffersError
from skyform.infra import UNPRICED
from skyform.plan.catalog.offer import Offer, format_count
from skyform.plan.optimizer.candidates import (
    Query,
    query_for,
    relaxed,
    run_query,
)

if TYPE_CHECKING:
    from skyform.plan.catalog import Catalog
    from skyform.plan.model import BlockedPlacement
    from skyform.spec import ResourceRequest, TaskSpec

MAX_SHOWN = 6


@dataclass(frozen=True)
class Nearest:
    """A relaxation that would work: what changes, the cheapest offer, USD/h for all nodes."""

    change: str
    offer: Offer
    hourly_cost: float

    def describe(self) -> str:
        text = f"{describe_offer(self.offer)} ${self.hourly_cost:.2f}/h"
        return f"{self.change}: {text}" if self.change else text


def describe_requests(groups: Sequence[Sequence[ResourceRequest]]) -> str:
    """Every request of a task, as the considered-resources header names them: the
    alternatives of a set (`accelerators: {A100:1, H100:1}`, `any_of`) joined by "or",
    ordered groups (`ordered:`) by "else"."""

    alone = sum(len(group) for group in groups) == 1

    def one(request: ResourceRequest) -> str:
        text = describe_request(request)
        return text if alone or "," not in text else f"({text})"

    def group_text(group: Sequence[ResourceRequest]) -> str:
        split = [describe_request(r).partition(", ")[::2] for r in group]
        heads, tails = [h for h, _ in split], [t for _, t in split]
        if len(group) > 1 and all(r.accelerator for r in group) and len(set(tails)) == 1:
            return "{" + ", ".join(heads) + "}" + (f", {tails[0]}" if tails[0] else "")
        return " or ".join(one(r) for r in group)  # the set in SkyPilot's notation, above

    return ", else ".join(group_text(group) for group in groups)


def describe_request(request: ResourceRequest) -> str:
    """What a request asks for, in task-YAML words: `A100:8, spot, aws/us-east-1`."""
    parts = []
    if request.accelerator:
        count = request.accelerator_count if request.accelerator_count is not None else 1
        parts.append(f"{request.accelerator}:{format_count(count)}")
    if request.instance_type:
        parts.append(request.instance_type)
    if request.cpus is not None:
        parts.append(f"cpus {request.cpus}")
        default_memory = (
            request.memory is None
            and not request.accelerator
            and not request.instance_type
            and request.cloud not in UNPRICED
        )
        if default_memory:
            parts.append("4 GiB per vCPU (the default)")
    if request.memory is not None:
        parts.append(f"memory {request.memory} GiB")
    if not parts and request.cloud in UNPRICED:
        parts.append("any size")
    elif not parts:
        parts.append("8+ vCPUs with 4 GiB per vCPU (the default)")
    if request.use_spot:
        parts.append("spot")
    if request.infra != "*":
        parts.append(request.infra)
    if request.max_hourly_cost is not None:
        parts.append(f"max ${request.max_hourly_cost:g}/h")
    return ", ".join(parts)


def describe_offer(offer: Offer) -> str:
    what = ""
    if offer.accelerator:
        what = f"{offer.accelerator}:{format_count(offer.accelerator_count)} "
    where = offer.zone or offer.region
    spot = " spot" if offer.spot else ""
    return f"{what}{offer.cloud} {offer.instance_type} ({where}){spot}"


BUNDLED_SUBSET = (
    "The price catalog in use is the bundled one, a subset of SkyPilot's (on AWS only GPU "
    "families and m7a, m7g, m8i: no m5, c6i, t3 or r6i): fetch the full one with `skyform "
    "catalog refresh`, which `plan` also does by itself when the network allows."
)


def no_offers_error(
    task: TaskSpec,
    index: int,
    catalog: Catalog,
    clouds: Sequence[str],
    blocked: Sequence[BlockedPlacement] = (),
) -> NoOffersError:
    requests = task.resources.alternatives()
    asked = "; or ".join(describe_request(r) for r in requests)
    line = task.source.resources_line or task.source.line
    where = f"{task.source.path}:{line}"
    unknown = _unknown_accelerators(requests, catalog) + _unsold_counts(requests, catalog, clouds)
    message = f"{where}: {task.called(index)}: no offer matches {asked}"
    if len(requests) == 1 and not requests[0].cloud:
        message += f" (clouds: {', '.join(clouds)})"
    found: list[Nearest] = []
    for request in requests:
        query = query_for(request, task.num_nodes, clouds, task.skyform.arch)
        for change, other in _relaxations(request, query, catalog, clouds):
            wanted = query.accelerator_count or 1.0
            for offer, change_text in _cheapest(catalog, other, change, blocked, wanted):
                item = Nearest(change_text, offer, offer.hourly_price * other.num_nodes)
                if all(item.offer != seen.offer for seen in found):
                    found.append(item)
    hints = list(unknown) + _kubernetes_notes(requests, catalog, clouds)
    skipped = [f"{b.describe()} ({b.reason})" for b in blocked if b.reason]
    if skipped:
        hints.insert(0, f"Not placed on: {'; '.join(skipped)}.")
    for request in requests:
        where_ = (request.cloud,) if request.cloud else tuple(clouds)
        vague = catalog.no_offers_hint(clouds=where_, cpus=request.cpus, memory=request.memory)
        if vague and vague not in hints:
            hints.append(vague)
    if found:
        shown = "; ".join(n.describe() for n in found[:MAX_SHOWN])
        hints.append(f"Nearest feasible: {shown}.")
    hints.append("Change `resources:` in the task file.")
    searched = {r.cloud for r in requests if r.cloud} or set(clouds)
    if catalog.source.kind == "bundled" and searched - set(UNPRICED):
        hints.append(BUNDLED_SUBSET)
    error = NoOffersError(message, " ".join(hints))
    error.nearest = found  # type: ignore[attr-defined]
    error.task_index = index  # type: ignore[attr-defined]
    return error


def _kubernetes_notes(requests: list[ResourceRequest], catalog: Catalog, clouds) -> list[str]:
    from skyform.plan.catalog.k8s_offers import kubernetes_scope

    scope = kubernetes_scope(requests, clouds)
    notes = catalog.kubernetes.why_not(scope) if scope else []
    return [f"Kubernetes was not considered: {'; '.join(notes)}."] if notes else []


def _unknown_accelerators(requests: list[ResourceRequest], catalog: Catalog) -> list[str]:
    notes = []
    for name in dict.fromkeys(r.accelerator for r in requests if r.accelerator):
        if catalog.canonical_accelerator(name) is not None:
            continue
        note = f"The catalog has no accelerator '{name}'."
        elsewhere = catalog.accelerator_clouds(name)
        if elsewhere:
            note += f" It is offered on {', '.join(elsewhere)}, which skyform does not run on."
        guesses = catalog.suggest_accelerators(name)
        if guesses:
            note += f" Did you mean {', '.join(guesses)}?"
        notes.append(note)
    return notes


def _unsold_counts(requests: list[ResourceRequest], catalog: Catalog, clouds) -> list[str]:
    notes = []
    for request in requests:
        name = request.accelerator and catalog.canonical_accelerator(request.accelerator)
        if not name:
            continue
        wanted = float(request.accelerator_count if request.accelerator_count is not None else 1)
        where = (request.cloud,) if request.cloud else tuple(clouds)
        where = tuple(c for c in where if c != "kubernetes")  # its notes say what nodes have
        if not where:
            continue
        counts = sorted(
            {o.accelerator_count for o in catalog.query(clouds=where, accelerator=name)}
        )
        if not counts:
            note = f"{name} is not sold on {', '.join(where)}."
            elsewhere = catalog.accelerator_clouds(name)
            if elsewhere:
                note += f" SkyPilot lists it on {', '.join(elsewhere)}."
            notes.append(note)
        elif wanted not in counts:
            sold = ", ".join(format_count(c) for c in counts)
            notes.append(
                f"{name}:{format_count(wanted)} is not sold on {', '.join(where)} "
                f"(counts sold: {sold})."
            )
    return notes


def _relaxations(request: ResourceRequest, query: Query, catalog: Catalog, clouds):
    if query.accelerator is not None:
        yield "count", relaxed(query, accelerator_count=None)
    if query.zone is not None:
        yield "in another zone", relaxed(query, zone=None)
    if query.region is not None or query.regions is not None:
        yield "in another region", relaxed(query, region=None, zone=None, regions=None)
    if request.cloud is not None:
        others = tuple(c for c in clouds if c != request.cloud)
        if others:
            yield "on another cloud", relaxed(query, clouds=others, region=None, zone=None)
    if query.spot:
        yield "on-demand", relaxed(query, spot=False)
    else:
        yield "spot", relaxed(query, spot=True)
    if query.max_hourly_cost is not None:
        yield "without max_hourly_cost", relaxed(query, max_hourly_cost=None)
    if query.cpus is not None or query.memory is not None or query.default_size:
        yield (
            "size",
            relaxed(query, cpus=None, memory=None, default_size=False, default_memory=False),
        )
    if query.instance_type is not None:
        same = _like_instance(catalog, query)
        if same is not None:
            yield "another instance type", same
    if query.num_nodes > 1:
        yield "fewer nodes", relaxed(query, num_nodes=1)
    if query.arch is not None:
        other = "x86_64" if query.arch == "arm64" else "arm64"
        yield f"{other} (skyform: {{arch: {other}}})", relaxed(query, arch=other)
    yield "if unblocked", relaxed(query, honour_blocked=False)


def _like_instance(catalog: Catalog, query: Query) -> Query | None:
    """The request with its instance type replaced by what that type carries."""
    known = catalog.query(clouds=catalog.clouds(), instance_type=query.instance_type, limit=1)
    if not known:
        return None
    kind = known[0]
    if kind.accelerator:
        return relaxed(
            query,
            instance_type=None,
            accelerator=kind.accelerator,
            accelerator_count=kind.accelerator_count,
            cpu_only=False,
        )
    return relaxed(query, instance_type=None, cpus=kind.vcpus, memory=kind.memory_gib)


def _cheapest(catalog, query: Query, change: str, blocked, wanted: float):
    offers = run_query(catalog, query, blocked)
    if change == "size":  # the biggest machine there is, cheapest among equals
        if offers:
            offer = min(offers, key=lambda o: (-(o.memory_gib or 0), -(o.vcpus or 0), o.sort_key))
            cpus, memory = format_count(offer.vcpus or 0), format_count(offer.memory_gib or 0)
            yield offer, f"largest available ({cpus} vCPUs, {memory} GiB)"
        return
    if change != "count":
        if offers:
            offer = offers[0]
            if change == "fewer nodes" and offer.capacity is not None:
                held = "pods its nodes hold" if offer.cloud == "kubernetes" else "pool's hosts"
                change = f"num_nodes: {offer.capacity} (the {held})"
            yield offer, change
        return
    by_count: dict[float, Offer] = {}
    for offer in offers:
        by_count.setdefault(offer.accelerator_count, offer)
    counts = sorted(by_count)
    above = [c for c in counts if c > wanted]
    below = [c for c in counts if c < wanted][::-1]
    for count in (above[:2] or below[:1]) + (below[:1] if above else []):
        yield by_count[count], ""  # the offer's own description names the count
