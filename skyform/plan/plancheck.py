"""Cross-checks of a plan read from a file (pure): what the loader refuses besides the schema.

A plan says the same thing in several places (the task's placement and its cluster change,
the digests and the job they describe, the summary and the changes). skyform writes them
consistent; a plan where they disagree was edited, and `show` and `apply` could then read
different stories from it. Every check returns (what, JSON path) for the first problem.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from skyform.jobvalues import is_env_name, mount_destination_problem
from skyform.plan.jobdigest import job_digest, setup_digest
from skyform.plan.naming import engine_name, is_cluster_name, is_skypilot_name
from skyform.plan.parts import PRICE_DIGITS, Action, count_actions, count_buckets, money

if TYPE_CHECKING:  # the checks read a Plan or the strict reader's PlanView alike
    from skyform.plan.model import ClusterChange, Plan, TaskPlacement

Problem = tuple[str, str]

MAX_STRING = 1024 * 1024  # a run script of a megabyte is already far from any real one
MAX_ITEMS = 10_000  # tasks, alternatives, envs...: per list or object
MAX_NUMBER = 1e15  # dollars, hours, nodes, serials: anything above is not a real plan
MAX_LABEL = 200
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
TOLERANCE = 10**-PRICE_DIGITS * 2  # the model rounds figures to PRICE_DIGITS


def check_values(raw: Any, *, max_depth: int) -> Problem | None:
    """Bounds on the decoded JSON itself: depth, sizes, numbers finite and non-negative,
    no NUL in any text."""
    stack: list[tuple[Any, str, int]] = [(raw, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > max_depth:
            return f"nested more than {max_depth} levels deep", where
        if isinstance(value, dict):
            if len(value) > MAX_ITEMS:
                return f"{len(value)} entries, more than {MAX_ITEMS}", where
            for key, item in value.items():
                if len(key) > MAX_STRING or "\0" in key:
                    return "a key holds a NUL or is too long", where
                stack.append((item, f"{where}.{key}" if where else key, depth + 1))
        elif isinstance(value, list):
            if len(value) > MAX_ITEMS:
                return f"{len(value)} items, more than {MAX_ITEMS}", where
            stack.extend((item, f"{where}.{i}", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            if len(value) > MAX_STRING:
                return f"text of {len(value)} characters, more than {MAX_STRING}", where
            if "\0" in value:
                return "text holds a NUL character", where
        elif isinstance(value, (int, float)) and not isinstance(value, bool):  # noqa: SIM102
            if not math.isfinite(value) or value < 0 or value > MAX_NUMBER:
                return f"{value!r} is not a number a plan can hold (finite, 0 or more)", where
    return None


def _label_problem(text: str) -> str | None:
    if not text or len(text) > MAX_LABEL or any(ord(c) < 32 or ord(c) == 127 for c in text):
        return f"{text!r} is not a task name skyform writes"
    return None


def _close(recorded: float, actual: float, terms: int = 1) -> bool:
    """Equal up to the model's rounding (one rounding per summed term)."""
    return math.isclose(recorded, money(actual), abs_tol=TOLERANCE * (1 + terms))


def check_plan(plan: Plan) -> Problem | None:
    checks = (_check_names, _check_tasks, _check_paths, _check_changes, _check_pairs)
    for check in (*checks, _check_summary):
        problem = check(plan)
        if problem is not None:
            return problem
    return None


def _duplicate(values: list, what: str, where: str) -> Problem | None:
    seen: set = set()
    for i, value in enumerate(values):
        if value in seen:
            return f"{what} {value!r} appears twice", f"{where}.{i}"
        seen.add(value)
    return None


def _check_names(plan: Plan) -> Problem | None:
    """Every cluster name is one skyform's sanitiser could have produced (it becomes a
    directory, a lock file and a stack name)."""
    named: list[tuple[str, str]] = []
    for i, t in enumerate(plan.tasks):
        named.append((t.cluster, f"tasks.{i}.cluster"))
    for i, c in enumerate(plan.changes):
        named.append((c.cluster, f"changes.{i}.cluster"))
        for side in ("before", "after"):
            spec = getattr(c, side)
            if spec is not None and spec.name != c.cluster:
                return (
                    f"cluster change {c.cluster!r} describes cluster {spec.name!r}",
                    f"changes.{i}.{side}.name",
                )
    named += [(u.cluster, f"untouched.{i}.cluster") for i, u in enumerate(plan.untouched)]
    for name, where in named:
        if not is_cluster_name(name):
            return f"{name!r} is not a cluster name skyform makes", where
    for i, c in enumerate(plan.changes):
        shown = c.after.shown_as if c.after is not None else None
        if shown is not None and (not is_skypilot_name(shown) or engine_name(shown) != c.cluster):
            return (
                f"cluster {c.cluster!r} is shown as {shown!r}, a name that is not its own",
                f"changes.{i}.after.shown_as",
            )
    return None


def _check_tasks(plan: Plan) -> Problem | None:
    labels = [t.task for t in plan.tasks]
    for i, t in enumerate(plan.tasks):
        for text, where in ((t.task, "task"), (t.job.name, "job.name")):
            problem = _label_problem(text)
            if problem:
                return problem, f"tasks.{i}.{where}"
        if t.job.name != t.task:
            return f"task {t.task!r} runs the job of {t.job.name!r}", f"tasks.{i}.job.name"
        if t.index >= len(plan.tasks):
            return f"task index {t.index} with {len(plan.tasks)} tasks", f"tasks.{i}.index"
        for j, parent in enumerate(t.depends_on):
            if parent not in labels or parent == t.task:
                return f"task {t.task!r} depends on {parent!r}", f"tasks.{i}.depends_on.{j}"
        job_problem = _check_job(t, f"tasks.{i}")
        if job_problem:
            return job_problem
    return (
        _duplicate(labels, "task", "tasks")
        or _duplicate([t.index for t in plan.tasks], "task index", "tasks")
        or _duplicate([t.cluster for t in plan.tasks], "cluster", "tasks")
        or _duplicate([c.cluster for c in plan.changes], "cluster", "changes")
        or _cycle(plan)
    )


def _cycle(plan: Plan) -> Problem | None:
    pending = {t.task: set(t.depends_on) for t in plan.tasks}
    while pending:
        ready = [name for name, parents in pending.items() if not parents & set(pending)]
        if not ready:
            return "the task dependencies form a cycle", "tasks.depends_on"
        for name in ready:
            del pending[name]
    return None


def _climbs_out(recorded: str) -> bool:
    """A relative path not in the form a plan records one (spec/portable.py: inside the base,
    normalized): `..`, `./x`, `a//b` point elsewhere than the task file says."""
    if recorded.startswith(("/", "~", "{", "$")) or "://" in recorded or recorded == ".":
        return False
    return any(part in ("", ".", "..") for part in recorded.split("/"))


def _check_paths(plan: Plan) -> Problem | None:
    """The local paths a plan records relative to its base stay inside the base."""
    base = plan.task.relative_to
    if (
        base is None
    ):  # a plan of a task with no relative paths (or made before relative paths started there)
        return None
    if base.startswith("~"):
        return f"{base!r} is not a directory relative to the plan file", "task.relative_to"
    recorded = [(f"buckets.{i}.uploads", s) for i, b in enumerate(plan.buckets) for s in b.uploads]
    for i, t in enumerate(plan.tasks):
        recorded += [(f"tasks.{i}.job.workdir", t.job.workdir or "")]
        recorded += [
            (f"tasks.{i}.job.file_mounts.{dst}", m.source) for dst, m in t.job.file_mounts.items()
        ]
    for where, path in recorded:
        if path and _climbs_out(path):
            return f"{path!r} climbs out of the directory task.relative_to names", where
    return None


def _check_job(t: TaskPlacement, where: str) -> Problem | None:
    job = t.job
    if job.secrets != sorted(set(job.secrets)):
        return "secret names are not sorted and unique", f"{where}.job.secrets"
    for kind, names in (("envs", job.envs), ("secrets", job.secrets)):
        for name in names:
            if not is_env_name(name):
                return f"{name!r} is not an environment variable name", f"{where}.job.{kind}"
    for dst in job.file_mounts:
        problem = mount_destination_problem(dst)
        if problem is not None:
            return problem[0], f"{where}.job.file_mounts"
    if job.num_nodes != t.num_nodes:
        return f"the job runs on {job.num_nodes} nodes, the task on {t.num_nodes}", where
    if job.setup_digest != setup_digest(job):
        return "setup_digest does not match the job's setup and envs", f"{where}.job.setup_digest"
    if job.job_digest != job_digest(job):
        return (
            "job_digest does not match the job's run, envs, workdir and file mounts",
            f"{where}.job.job_digest",
        )
    if not _close(t.hourly_cost, t.offer.hourly_price * t.num_nodes):
        return "hourly_cost is not the offer's price times its nodes", f"{where}.hourly_cost"
    chosen = [(k, a) for k, a in enumerate(t.alternatives) if a.chosen]
    if t.alternatives and len(chosen) != 1:
        return f"{len(chosen)} chosen alternatives, not 1", f"{where}.alternatives"
    for k, alt in chosen:
        if alt.offer != t.offer or not _close(alt.hourly_cost, t.hourly_cost):
            return "the chosen alternative is not the task's offer", f"{where}.alternatives.{k}"
    return None


def _check_changes(plan: Plan) -> Problem | None:
    """The `destroy` flag agrees with the actions, and each action has the sides it needs."""
    for i, c in enumerate(plan.changes):
        where = f"changes.{i}"
        if plan.destroy and c.action is not Action.DELETE:
            return f"a destroy plan {c.action.value}s cluster {c.cluster!r}", f"{where}.action"
        if not plan.destroy and c.action is Action.DELETE:
            return f"a plan that is not a destroy plan deletes {c.cluster!r}", f"{where}.action"
        for side, needed in (
            ("before", c.action is not Action.CREATE),
            ("after", c.action is not Action.DELETE),
        ):
            if (getattr(c, side) is not None) != needed:
                return f"a {c.action.value} change {'without' if needed else 'with'} {side}", where
    if plan.destroy and plan.tasks:
        return "a destroy plan places tasks", "tasks"
    return None


def _check_pairs(plan: Plan) -> Problem | None:
    """Tasks and changes one to one, saying the same thing (one source of truth)."""
    if plan.destroy:
        return None
    changes = {c.cluster: (i, c) for i, c in enumerate(plan.changes)}
    for t in plan.tasks:
        if t.cluster not in changes:
            return f"task {t.task!r} has no change for its cluster {t.cluster!r}", "changes"
        k, change = changes[t.cluster]
        problem = _same(t, change, f"changes.{k}.after") or _attached(t, change, f"changes.{k}")
        if problem:
            return problem
    tasks = {t.cluster for t in plan.tasks}
    for cluster, (k, _) in changes.items():
        if cluster not in tasks:
            return f"change of {cluster!r} has no task", f"changes.{k}"
    return None


def _same(t: TaskPlacement, change: ClusterChange, where: str) -> Problem | None:
    after = change.after
    assert after is not None  # _check_changes: every change of a non-destroy plan has one
    if after.offer != t.offer:
        return f"the change's offer differs from task {t.task!r}'s offer", f"{where}.offer"
    if after.num_nodes != t.num_nodes:
        return f"{after.num_nodes} nodes in the change, {t.num_nodes} in the task", where
    if (after.setup_digest, after.job_digest) != (t.job.setup_digest, t.job.job_digest):
        return f"the change's job digests differ from task {t.task!r}'s job", where
    return None


def _attached(t: TaskPlacement, change: ClusterChange, where: str) -> Problem | None:
    """What apply attaches again is an update's, and each is a bucket mount of the job."""
    if not change.attach_again:
        return None
    if change.action is not Action.UPDATE:
        return f"a {change.action.value} change attaches mounts again", f"{where}.attach_again"
    for j, dst in enumerate(change.attach_again):
        mount = t.job.file_mounts.get(dst)
        if mount is None or mount.bucket is None:
            return f"{dst!r} is not a bucket mount of task {t.task!r}", f"{where}.attach_again.{j}"
    return _duplicate(change.attach_again, "mount", f"{where}.attach_again")


def _check_summary(plan: Plan) -> Problem | None:
    s = plan.summary
    counted = count_actions(plan.changes)
    if (s.add, s.change, s.destroy) != counted:
        return (
            f"the summary says {s.add} to add, {s.change} to change, {s.destroy} to destroy; "
            f"the changes are {counted[0]}, {counted[1]}, {counted[2]}",
            "summary",
        )
    buckets = count_buckets(plan.buckets)
    if (s.buckets_add, s.buckets_change) != buckets:
        return (
            f"the summary says {s.buckets_add} bucket(s) to create and {s.buckets_change} to "
            f"upload again; the plan's buckets are {buckets[0]} and {buckets[1]}",
            "summary",
        )
    before = sum(c.before.hourly_cost for c in plan.changes if c.before is not None)
    after = sum(c.after.hourly_cost for c in plan.changes if c.after is not None)
    for name, actual in (("hourly_before", before), ("hourly_after", after)):
        recorded = getattr(s, name)
        if not _close(recorded, actual, terms=len(plan.changes)):
            return f"{name} {recorded:g} is not the sum of the changes ({actual:g})", (
                f"summary.{name}"
            )
    for name in ("file_digest", "digest"):
        if not DIGEST.fullmatch(getattr(plan.task, name)):
            return "not a sha256 digest", f"task.{name}"
    return None
