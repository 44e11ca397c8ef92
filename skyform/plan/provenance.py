"""Why a plan is stale: what it was made from, against something else (pure).

A plan records its provenance (task file and task digests, catalog and on-prem digests, the
state's lineage and serial, objective, flags, the digests of local sources uploaded into
buckets). `differences(a, b)` is the one comparison:
`apply` compares a plan with the world now (apply/freshness.py), `plan --check` and
`cost diff` compare two plans (cost/compare.py). Each says the differences in its own words;
which inputs count, and how the state is compared, is decided here only.
"""

from __future__ import annotations

from dataclasses import dataclass

from skyform.plan.model import Plan


@dataclass(frozen=True)
class Provenance:
    """What a plan rests on. None in a field: not known on that side, so not compared."""

    task_path: str | None = None
    # where the task's relative paths start, as the plan records it (relative to the plan)
    relative_to: str | None = None
    task_file: str | None = None  # sha256 of the task file's bytes ("" : the file is gone)
    task: str | None = None  # of the resolved task (secrets hashed), flags included
    overrides: tuple[tuple[str, str], ...] | None = None
    catalog: str | None = None
    onprem: str | None = None
    lineage: str | None = None
    serial: int | None = None
    # the world's side only: the clusters the plan acts on that changed after its serial,
    # with their latest change (`up`, `destroyed` ...); None compares serials (two plans)
    changed: tuple[tuple[str, str], ...] | None = None
    objective: str | None = None
    destroy: bool | None = None
    blocked: tuple | None = None
    allowed: tuple | None = None
    version: str | None = None
    # (bucket URI, digest of the local sources uploaded into it: "" when gone), sorted
    sources: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Difference:
    kind: str  # task_path task_file task catalog onprem lineage state clusters objective ...
    before: str = ""
    after: str = ""
    count_before: int = 0  # blocked/allowed: how many on each side; clusters: how many
    count_after: int = 0


def of_plan(plan: Plan) -> Provenance:
    return Provenance(
        task_path=plan.task.path,
        relative_to=plan.task.relative_to or "",
        task_file=plan.task.file_digest,
        task=plan.task.digest,
        overrides=tuple(sorted(plan.task.overrides.items())),
        catalog=plan.catalog_digest,
        onprem=plan.onprem_digest,
        lineage=plan.prior.lineage,
        serial=plan.prior.serial,
        objective=plan.objective,
        destroy=plan.destroy,
        blocked=tuple(plan.blocked),
        allowed=tuple(plan.allowed),
        version=plan.skyform_version,
        sources=tuple(
            sorted((b.uri, b.source_digest) for b in plan.buckets if b.source_digest is not None)
        ),
    )


def touched_clusters(plan: Plan) -> list[str]:
    """The clusters a plan acts on: its freshness rests on these (and on nothing else in
    state), so plans for other clusters made from the same state apply side by side."""
    return sorted({c.cluster for c in plan.changes} | {t.cluster for t in plan.tasks})


def _known(a: object, b: object) -> bool:
    return a is not None and b is not None and a != b


def differences(a: Provenance, b: Provenance) -> list[Difference]:
    """How `b` differs from `a` (`a` the plan, `b` another plan or the world now)."""
    found: list[Difference] = []

    def add(kind: str, before: object, after: object) -> None:
        found.append(Difference(kind, str(before), str(after)))

    if _known(a.task_path, b.task_path):
        add("task_path", a.task_path, b.task_path)
    if _known(a.relative_to, b.relative_to):  # skyform ran from another directory
        add("relative_to", a.relative_to, b.relative_to)
    if _known(a.task_file, b.task_file):
        add("task_file", a.task_file, b.task_file)
    elif (
        _known(a.task, b.task)
        and a.overrides == b.overrides
        and not _known(a.relative_to, b.relative_to)  # else: the moved base explains it
    ):
        add("task", a.task, b.task)  # same file and flags: what the task reads changed
    if _known(a.catalog, b.catalog):
        add("catalog", a.catalog, b.catalog)
    if _known(a.onprem, b.onprem):
        add("onprem", a.onprem, b.onprem)
    if _known(a.sources, b.sources):  # before: the buckets whose local sources differ
        before, after = dict(a.sources or ()), dict(b.sources or ())
        changed = sorted(u for u in {*before, *after} if before.get(u) != after.get(u))
        found.append(Difference("sources", ", ".join(changed), count_after=len(changed)))
    found += _state(a, b)
    if _known(a.objective, b.objective):
        add("objective", a.objective, b.objective)
    if _known(a.overrides, b.overrides):
        add("overrides", a.overrides, b.overrides)
    if _known(a.destroy, b.destroy):
        add("destroy", str(a.destroy).lower(), str(b.destroy).lower())
    for kind in ("blocked", "allowed"):  # recovery's "not there" and "only there"
        before, after = getattr(a, kind), getattr(b, kind)
        if _known(before, after):
            found.append(Difference(kind, count_before=len(before), count_after=len(after)))
    if _known(a.version, b.version):
        add("version", a.version, b.version)
    return found


def _state(a: Provenance, b: Provenance) -> list[Difference]:
    if _known(a.lineage, b.lineage):
        return [Difference("lineage", a.lineage or "", b.lineage or "")]
    if b.changed is not None:  # the world: only the clusters the plan acts on count
        changed = ", ".join(f"{name} ({kind})" for name, kind in b.changed)
        found = Difference("clusters", str(a.serial), changed, count_after=len(b.changed))
        return [found] if b.changed else []
    if (a.lineage, a.serial) != (b.lineage, b.serial):
        return [Difference("state", f"{a.lineage}:{a.serial}", f"{b.lineage}:{b.serial}")]
    return []
