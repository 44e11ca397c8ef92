"""From the task spec and the catalog to the optimizer's `Problem`.

Per task, `ResourceChoices.groups` are tried in order: the first group with any feasible
candidate is the task's group, and the optimizer picks the best candidate within it. Each
`ResourceRequest` becomes one catalog query (`Query`):
- clouds: the request's cloud, else `clouds` (config `plan.clouds`; aws and gcp by default —
  never local, ssh or kubernetes implicitly: they are free and would always win);
- region / zone / context as given (None = any); `image_id: {region: image}` keeps those regions;
- accelerators: name through the catalog's aliases, exact count (`V100:8` is exactly 8, as in
  SkyPilot); a request without accelerators or instance type gets CPU-only offers;
- cpus / memory ranges; with none of cpus, memory, accelerators, instance_type, SkyPilot's
  default applies on priced clouds: at least 8 vCPUs and memory >= 4 GiB per vCPU;
- architecture: `skyform.arch` (x86_64, arm64, any); without it x86_64 on aws/gcp (SkyPilot's
  default instance families are x86), unless the request names an instance type (it is what
  it is) or an arm64 image (`...-arm64` tags, images whose id says arm64/aarch64);
- use_spot; max_hourly_cost against price × num_nodes; ssh pools with fewer hosts than
  num_nodes (or than are free: `held`) are out; blocked placements are removed.
Hours come from `skyform.estimated_hours` (a number, or accelerator -> hours with `default`;
1 h when absent). Data: an edge u -> v carries u's `outputs`; v's `inputs` with a known place
(`skyform.inputs_location`, or the bucket scheme) are an `Anchor`, unless they are a parent's
outputs (same URI), which already travel over that edge.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from skyform.infra import PRICED, UNPRICED
from skyform.plan.catalog.offer import Location, Offer, needs_opt_in
from skyform.plan.optimizer.problem import Anchor, Candidate, Edge, Objective, Problem, Task

if TYPE_CHECKING:
    from skyform.plan.catalog import Catalog
    from skyform.plan.model import BlockedPlacement
    from skyform.spec import Dag, ResourceRequest, TaskSpec

DEFAULT_MIN_VCPUS = 8.0
DEFAULT_MEMORY_PER_VCPU = 4.0
DEFAULT_HOURS = 1.0
PRICE_SLACK = 1e-9  # max_hourly_cost comparisons forgive float noise in price × nodes


@dataclass(frozen=True)
class Query:
    """One request, resolved to catalog filters (relaxed copies drive NoOffersError hints)."""

    clouds: tuple[str, ...]
    region: str | None = None
    zone: str | None = None
    context: str | None = None
    accelerator: str | None = None
    accelerator_count: float | None = None
    cpu_only: bool = False
    cpus: Any = None
    memory: Any = None
    default_size: bool = False  # SkyPilot's >= 8 vCPUs, >= 4 GiB/vCPU on priced clouds
    # SkyPilot's default memory when a CPU-only request gives cpus but no memory: 4 GiB/vCPU
    default_memory: bool = False
    instance_type: str | None = None
    spot: bool = False
    max_hourly_cost: float | None = None
    regions: tuple[str, ...] | None = None  # from image_id {region: image}
    num_nodes: int = 1
    honour_blocked: bool = True
    arch: str | None = None  # None = any
    arch_everywhere: bool = False  # asked for explicitly: also on local/ssh/kubernetes


ARM_WORDS = ("arm64", "aarch64")


def arch_for(request: ResourceRequest, declared: str | None) -> tuple[str | None, bool]:
    """(architecture to keep, whether it was asked for explicitly)."""
    if declared == "any":
        return None, False
    if declared is not None:
        return declared, True
    if request.instance_type is not None:
        return None, False
    image = request.image_id
    images = list(image.values()) if isinstance(image, dict) else [image] if image else []
    if any(word in i.lower() for i in images for word in ARM_WORDS):
        return "arm64", True
    return "x86_64", False


def query_for(
    request: ResourceRequest, num_nodes: int, clouds: Sequence[str], arch: str | None = None
) -> Query:
    wanted = (request.cloud,) if request.cloud else tuple(clouds)
    accelerator = request.accelerator
    count = None
    if accelerator is not None:
        count = float(request.accelerator_count if request.accelerator_count is not None else 1)
    sized = any(x is not None for x in (request.cpus, request.memory, accelerator))
    image = request.image_id
    wanted_arch, explicit = arch_for(request, arch)
    return Query(
        clouds=wanted,
        region=request.region,
        zone=request.zone,
        context=request.context,
        accelerator=accelerator,
        accelerator_count=count,
        cpu_only=accelerator is None and request.instance_type is None,
        cpus=request.cpus,
        memory=request.memory,
        default_size=not sized and request.instance_type is None,
        default_memory=accelerator is None
        and request.instance_type is None
        and request.memory is None,
        instance_type=request.instance_type,
        spot=bool(request.use_spot),
        max_hourly_cost=request.max_hourly_cost,
        regions=tuple(image) if isinstance(image, dict) else None,
        num_nodes=num_nodes,
        arch=wanted_arch,
        arch_everywhere=explicit,
    )


def free_hosts(catalog: Catalog, offer: Offer, busy: Collection[str]) -> int | None:
    """How many of an ssh offer's hosts are not reserved by `busy` (None: unbounded)."""
    if offer.capacity is None:
        return None
    if not busy:
        return offer.capacity
    return offer.capacity - sum(h in busy for h in catalog.ssh_members(offer.id))


def run_query(
    catalog: Catalog,
    query: Query,
    blocked: Sequence[BlockedPlacement] = (),
    busy: Collection[str] = (),
    *,
    cheapest_per_place: bool = False,
) -> list[Offer]:
    """Offers satisfying `query`, cheapest first (the catalog's total order). `busy`: ssh
    hosts other clusters hold, which this plan cannot have.

    `cheapest_per_place`: the catalog may return only the cheapest offer per (cloud, region,
    zone, accelerator, count, spot) of its priced clouds — exact because every filter below is
    either the same for all offers of a place or monotone in price, once the memory ratio and
    the architecture are given to the catalog; blocked placements (which can name an instance
    type) are not, so they turn it off. A new filter that can tell two offers of one place
    apart must be given to catalog.query too.
    """
    found: list[Offer] = []
    for cloud in query.clouds:
        default = query.default_size and cloud not in UNPRICED
        ratio = (default or query.default_memory) and cloud not in UNPRICED
        arch = query.arch is not None and (query.arch_everywhere or cloud not in UNPRICED)
        offers = catalog.query(
            cloud=cloud,
            region=query.region if cloud != "kubernetes" else None,
            zone=query.zone,
            context=query.context,
            accelerator=query.accelerator,
            accelerator_count=0.0 if query.cpu_only else query.accelerator_count,
            cpus=DEFAULT_MIN_VCPUS if default else query.cpus,
            memory=query.memory,
            instance_type=query.instance_type,
            spot=query.spot,
            min_memory_per_vcpu=DEFAULT_MEMORY_PER_VCPU if ratio else None,
            arch=query.arch if arch else None,
            cheapest_per_place=cheapest_per_place and not blocked,
        )
        for offer in offers:
            if query.zone is None and needs_opt_in(offer):
                continue
            if ratio and (offer.memory_gib or 0.0) < DEFAULT_MEMORY_PER_VCPU * (offer.vcpus or 0):
                continue
            if query.regions is not None and offer.region not in query.regions:
                continue
            if arch and offer.arch != query.arch:
                continue
            free = free_hosts(catalog, offer, busy)
            if free is not None and free < query.num_nodes:
                continue
            if query.max_hourly_cost is not None and (
                offer.hourly_price * query.num_nodes > query.max_hourly_cost + PRICE_SLACK
            ):
                continue
            if query.honour_blocked and any(b.matches(offer) for b in blocked):
                continue
            found.append(offer)
    if len(query.clouds) > 1:
        found.sort()
    return found


def hours_table(task: TaskSpec, catalog: Catalog) -> tuple[float, dict[str, float]]:
    """(default hours, accelerator -> hours) with the catalog's spelling of each name."""
    hours = task.skyform.estimated_hours
    if hours is None:
        return DEFAULT_HOURS, {}
    if isinstance(hours, int | float):
        return float(hours), {}
    table = {}
    for name, value in hours.items():
        if name != "default":
            table[(catalog.canonical_accelerator(name) or name).upper()] = float(value)
    return float(hours.get("default", DEFAULT_HOURS)), table


def task_candidates(
    task: TaskSpec,
    catalog: Catalog,
    clouds: Sequence[str],
    blocked: Sequence[BlockedPlacement] = (),
    memo: dict[tuple[Query, ...], list[tuple[Offer, int]]] | None = None,
    busy: Collection[str] = (),
) -> tuple[Candidate, ...]:
    """Candidates of the first resource group that has any; () when none has.

    Only the cheapest offer per (place, accelerator, count, spot) is kept: at one place every
    such offer has the same hours and the same transfers, so a pricier one can never be the
    optimum nor the best row of the "considered" table (ties go to the catalog's order).
    `memo` shares query results between tasks asking for the same thing.
    """
    memo = {} if memo is None else memo
    default_hours, by_accelerator = hours_table(task, catalog)
    for g, group in enumerate(task.resources.groups):
        queries = tuple(
            query_for(request, task.num_nodes, clouds, task.skyform.arch) for request in group
        )
        chosen = memo.get(queries)
        if chosen is None:
            chosen = memo[queries] = _cheapest_per_place(catalog, queries, blocked, busy)
        if chosen:
            return tuple(
                Candidate(offer, task.num_nodes, _hours(offer, default_hours, by_accelerator), g, r)
                for offer, r in chosen
            )
    return ()


def _cheapest_per_place(
    catalog: Catalog,
    queries: tuple[Query, ...],
    blocked: Sequence[BlockedPlacement],
    busy: Collection[str] = (),
) -> list[tuple[Offer, int]]:
    """(offer, request index), cheapest per (place, accelerator, count, spot), in catalog order."""
    best: dict[tuple, tuple[Offer, int]] = {}
    for r, query in enumerate(queries):
        for offer in run_query(catalog, query, blocked, busy, cheapest_per_place=True):
            place = (offer.cloud, offer.region, offer.zone)
            key = (*place, offer.accelerator, offer.accelerator_count, offer.spot)
            seen = best.get(key)
            if seen is None:
                best[key] = (offer, r)
            elif seen[1] != r and offer.sort_key < seen[0].sort_key:
                best[key] = (offer, r)  # an earlier request's offer here was pricier
    return sorted(best.values(), key=lambda pair: pair[0].sort_key)


def _hours(offer: Offer, default: float, by_accelerator: dict[str, float]) -> float:
    return by_accelerator.get((offer.accelerator or "").upper(), default)


def parse_location(text: str | None) -> Location | None:
    """`aws`, `aws/us-east-1`, `gcp/*/us-central1-a` -> Location (None when unknown)."""
    if not text:
        return None
    parts = [None if p in ("", "*") else p for p in text.split("/")]
    if parts[0] is None:
        return None
    parts += [None, None]
    return Location(parts[0], parts[1], parts[2])


def data_flows(dag: Dag) -> tuple[tuple[Edge, ...], tuple[Anchor, ...]]:
    edges = []
    produced: dict[int, set[str]] = {}
    for u, v in dag.edges:
        outputs = dag.tasks[u].outputs
        edges.append(Edge(u, v, float(sum(outputs.values()))))
        produced.setdefault(v, set()).update(outputs)
    anchors = []
    for v, task in enumerate(dag.tasks):
        where = parse_location(task.skyform.inputs_location)
        if where is None:
            continue
        for uri, size in task.inputs.items():
            if uri not in produced.get(v, set()) and size > 0:
                anchors.append(Anchor(v, where, float(size), uri))
    return tuple(edges), tuple(anchors)


def default_clouds(catalog: Catalog, clouds: Iterable[str] | None) -> tuple[str, ...]:
    if clouds is not None:
        return tuple(clouds)
    return tuple(getattr(catalog, "default_clouds", PRICED))


def build_problem(
    dag: Dag,
    catalog: Catalog,
    candidates: Sequence[tuple[Candidate, ...]],
    objective: Objective,
    extra_anchors: Sequence[Anchor] = (),
) -> Problem:
    edges, anchors = data_flows(dag)
    replaced = {(a.task, a.label) for a in extra_anchors}  # the same data, better located
    anchors = (*(a for a in anchors if (a.task, a.label) not in replaced), *extra_anchors)
    tasks = tuple(Task(task.label(v), candidates[v]) for v, task in enumerate(dag.tasks))
    egress = catalog.egress
    return Problem(tasks, edges, anchors, objective, egress.transfer, egress.by_region)


def relaxed(query: Query, **changes: Any) -> Query:
    return replace(query, **changes)
