"""Saved plans, as the verbs that take or make one use them (`plan -o`, `show`, `apply PLAN`,
`launch`, `cost`, `export`, `jobs plans`): the untrusted reader, the canonical bytes, and
the content digest a review posts. Light on purpose: `show` imports nothing else."""

from __future__ import annotations

from pathlib import Path

from skyform.errors import PlanFileError
from skyform.paths import output_file
from skyform.plan import planfile
from skyform.plan.model import Plan

# A plan made by `apply TASK.yaml` or `launch` and never saved: its task path is relative to
# the current directory, as if the plan were saved there under this name.
UNSAVED_PLAN = ".skyform-unsaved-plan.json"


def read(path: Path) -> tuple[Plan, bytes]:
    """The plan in `path` and the exact bytes it was read from (checked as untrusted)."""
    return planfile.read_plan(path)


def read_reviewed(path: Path, expected_digest: str | None) -> tuple[Plan, bytes]:
    """A saved plan, refused unless it is the one reviewed (`--expect-digest`)."""
    plan, data = planfile.read_plan(path)
    require_digest(plan, expected_digest, str(path))
    return plan, data


def save(plan: Plan, path: Path) -> bytes:
    return planfile.write_plan(plan, path)


def check_output(path: str | Path) -> None:
    """Refuse a `-o` that cannot take a plan (a directory, a device, a FIFO) up front."""
    output_file(path, "the plan")


def unsaved() -> Path:
    """Where a plan made here counts as saved (only its folder is used)."""
    return Path.cwd() / UNSAVED_PLAN


def digest_of(plan: Plan) -> str:
    """The content digest: what a review posts, apply records and export tags with."""
    return planfile.content_digest(plan)


def require_digest(plan: Plan, expected: str | None, label: str) -> None:
    """Refuse a plan that is not the one reviewed (its digest is in the PR comment)."""
    if expected is None:
        return
    actual = planfile.content_digest(plan)
    if actual != expected.strip():
        raise PlanFileError(
            f"{label} has content digest {actual}, not the expected {expected.strip()}: "
            "it is not the plan that was reviewed",
            "Apply the reviewed plan file, or review this one (skyform show --markdown) and "
            "pass its digest.",
        )


def as_of_committed(committed: Plan, fresh: Plan) -> Plan:
    """`fresh` (planning now) read against the committed plan's state serial when only
    clusters the plan does not act on changed since: `plan --check` then judges a committed
    plan as `apply` does (per cluster), and a teammate's apply of another cluster does not
    make every committed plan out of date."""
    from skyform.plan.provenance import touched_clusters
    from skyform.state.store import open_state, state_exists

    before, now = committed.prior, fresh.prior
    # planned before any state existed (no lineage): every change since counts, from serial 0
    if before == now or before.lineage not in (None, now.lineage) or not state_exists():
        return fresh
    with open_state() as db:
        names = set(touched_clusters(committed)) | set(touched_clusters(fresh))
        if any(db.cluster_version(name) > before.serial for name in names):
            return fresh
    return fresh.model_copy(update={"prior": before})
