"""What a plan runs, as the text and markdown plans show it (pure).

A reviewer must see exactly what `apply` will execute: the setup and run text, the envs with
their values, the secrets by name, the workdir path and the file mounts. An edit to any of
them in the plan file then shows in `show`, `show --markdown` and `cost --markdown`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skyform.cli.render.visible import script_lines
from skyform.plan.parts import STORE_SCHEMES, Action, member_host

if TYPE_CHECKING:  # the models, or the strict reader's views of them (plan/planview.py)
    from skyform.plan.model import JobSpec, Plan, TaskPlacement

Shown = Callable[[str], str]
SECRET_NOTE = "names only: values come from the task file, --secret or the environment"


def running(plan: Plan) -> list[TaskPlacement]:
    """The tasks whose job this plan starts (a change other than no-op or delete)."""
    out = []
    for t in plan.tasks:
        change = plan.change_for(t.cluster)
        if change is not None and change.action not in (Action.NOOP, Action.DELETE):
            out.append(t)
    return out


def _same(path: str) -> str:
    return path


def _fields(job: JobSpec, shown: Shown = _same) -> list[tuple[str, str]]:
    """`shown`: a recorded local path as the reviewer reads it (Plan.shown_path: absolute)."""
    fields = [("workdir", shown(job.workdir) if job.workdir else "none")]
    if job.file_mounts:
        fields.append(
            (
                "file_mounts",
                ", ".join(
                    f"{dst} <- {mount_source(m, shown)}" + (f" ({m.mode})" if m.mode else "")
                    for dst, m in sorted(job.file_mounts.items())
                ),
            )
        )
    if job.envs:
        fields.append(("envs", ", ".join(f"{k}={v!r}" for k, v in sorted(job.envs.items()))))
    if job.secrets:
        fields.append(("secrets", ", ".join(job.secrets)))
    if job.checkpoint_dir:
        fields.append(("checkpoint_dir", job.checkpoint_dir))
    return fields


def mount_source(mount: Any, shown: Shown = _same) -> str:
    """A mount's source as the task file says it: a bucket as its URI (and what is uploaded
    into it), not the canonical JSON the plan keeps for the job's digest."""
    source: str = mount.source
    try:
        spec: Any = json.loads(source) if source.startswith("{") else None
    except ValueError:
        spec = None
    placed = mount.bucket  # set once the task is placed (the store is then known)
    if not isinstance(spec, dict):
        if placed is None or "://" in source:
            return shown(source)
        uri = f"{STORE_SCHEMES.get(placed.store, placed.store)}://{placed.bucket}"
        return f"{uri} (uploaded from {shown(source)})"
    bucket: dict = spec["bucket"] if isinstance(spec.get("bucket"), dict) else {}
    name = bucket.get("name") or spec.get("name")
    store = bucket.get("store") or spec.get("store") or (placed.store if placed else None)
    text = f"{STORE_SCHEMES.get(store, store)}://{name}" if name and store else f"bucket {name}"
    local = spec.get("source")
    if local:
        local = [local] if isinstance(local, str) else local
        text += f" (uploaded from {', '.join(shown(s) for s in local)})"
    return text


def group_names(plan: Plan, t: TaskPlacement) -> str | None:
    """How the other tasks of a job group reach this one's nodes, or None outside a group."""
    group = plan.task.name
    if plan.task.execution != "parallel" or not group:
        return None
    return ", ".join(member_host(t.task, rank, group) for rank in range(t.num_nodes))


def job_text_lines(t: TaskPlacement, names: str | None = None, shown: Shown = _same) -> list[str]:
    """The text plan's block, printed without markup (it is user text); `names`: the job
    group's names for its nodes; `shown` as _fields'."""
    job = t.job
    nodes = f"{t.num_nodes} node{'s' if t.num_nodes != 1 else ''}"
    lines = [f'  # runs on cluster "{t.cluster}" (task {t.task!r}, {nodes}):']
    if names:
        lines.append(f"  # reached by the group's other tasks as {names}")
    fields = _fields(job, shown)
    width = max(len(k) for k, _ in fields)
    for k, v in fields:
        note = f"  # {SECRET_NOTE}" if k == "secrets" else ""
        lines.append(f"      {k.ljust(width)} = {v}{note}")
    for name, text in (("setup", job.setup), ("run", job.run)):
        if text:
            lines.append(f"      {name} = <<-EOT")
            lines += [f"        {line}" for line in script_lines(text)]
            lines.append("      EOT")
        else:
            lines.append(f"      {name} = null")
    return lines


def fence(text: str, info: str = "") -> list[str]:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return [f"{ticks}{info}", *script_lines(text), ticks]


def _code(text: str) -> str:
    """Inline code that survives any backticks in `text`."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    text = text.replace("\n", " ")
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def job_markdown(plan: Plan) -> list[str]:
    tasks = running(plan)
    if not tasks:
        return []
    lines = ["#### What will run", ""]
    for t in tasks:
        nodes = f"{t.num_nodes} node{'s' if t.num_nodes != 1 else ''}"
        lines += [f"On {_code(t.cluster)} (task {_code(t.task)}, {nodes}):", ""]
        names = group_names(plan, t)
        if names:
            lines += [f"- reached by the group's other tasks as {_code(names)}"]
        lines += [
            f"- {k}" + (f" ({SECRET_NOTE})" if k == "secrets" else "") + f": {_code(v)}"
            for k, v in _fields(t.job, plan.shown_path)
        ]
        lines.append("")
        for name, text in (("setup", t.job.setup), ("run", t.job.run)):
            if text:
                lines += [f"`{name}`:", "", *fence(text, "sh"), ""]
    return lines
