"""How a validated task looks: a readable YAML-like summary, or the normalized JSON.

`summary_lines` is pure (plain text, no markup) so it can be golden-tested; secrets are
shown as `<redacted>` and never read.
"""

from __future__ import annotations

import json
import sys

from rich.markup import escape

from skyform.cli.render.console import make_console
from skyform.cli.render.visible import script_lines
from skyform.spec import Dag, ResourceRequest, TaskSpec
from skyform.spec.models import DEFAULT_DISK_SIZE_GB, REDACTED, FileMount, GitWorkdir


def render_validation(dag: Dag, warnings: list[str], digest: str, *, as_json: bool) -> None:
    if as_json:
        payload = {
            "valid": True,
            "task_digest": digest,
            "warnings": warnings,
            "dag": dag.model_dump(mode="json", exclude={"warnings"}),
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    console = make_console()
    lines = summary_lines(dag, warnings, digest)
    console.print(f"[green]{escape(lines[0])}[/]", soft_wrap=True)
    for line in lines[1:]:
        style = "yellow" if line.startswith("  ! ") else None
        text = escape(line)
        console.print(f"[{style}]{text}[/]" if style else text, soft_wrap=True)


def summary_lines(dag: Dag, warnings: list[str], digest: str) -> list[str]:
    source = dag.tasks[0].source.path
    count = len(dag.tasks)
    if count == 1:
        head = f"{source}: valid, 1 task"
    else:
        name = f" '{dag.name}'" if dag.name else ""
        head = f"{source}: valid, pipeline{name} ({dag.execution}) of {count} tasks"
    lines = [head]
    for index, task in enumerate(dag.tasks):
        lines += ["", *task_lines(task, index)]
    lines += ["", f"pipeline: {dag_shape(dag)}", f"task digest: {digest}"]
    if warnings:
        lines += ["", "warnings:", *(f"  ! {w}" for w in warnings)]
    return lines


def dag_shape(dag: Dag) -> str:
    labels = [t.label(i) for i, t in enumerate(dag.tasks)]
    if len(labels) == 1:
        return f"{labels[0]} (single task)"
    if not dag.edges:
        return " | ".join(labels) + " (side by side)"
    if dag.is_chain():
        return " -> ".join(labels[i] for i in dag.topological_order())
    return ", ".join(f"{labels[u]} -> {labels[v]}" for u, v in dag.edges)


def task_lines(task: TaskSpec, index: int) -> list[str]:
    lines = [f"{task.label(index)}  ({task.source.path}:{task.source.line})"]
    lines.append(f"  num_nodes: {task.num_nodes}")
    lines += _resources(task)
    if task.workdir is not None:
        lines.append(f"  workdir: {_workdir(task.workdir)}")
    lines += _mapping("envs", task.envs)
    lines += _mapping("secrets", dict.fromkeys(task.secrets, REDACTED))
    lines += _mapping("file_mounts", {k: _mount(v) for k, v in task.file_mounts.items()})
    for key in ("inputs", "outputs"):
        for uri, size in getattr(task, key).items():
            lines.append(f"  {key}: {uri} ({size:g} GB)")
    for key in ("setup", "run"):
        script = getattr(task, key)
        if script is not None:
            lines.append(f"  {key}: {_script(script)}")
    if task.service is not None:
        service, probe = task.service, task.service.readiness_probe
        lines.append(
            f"  service: {service.replica_policy.describe()} · port {service.ports} · "
            f"probe {probe.method} {probe.path} · {service.load_balancing_policy}"
        )
    ext = task.skyform
    if ext.estimated_hours is not None:
        lines.append(f"  estimated_hours: {_hours(ext.estimated_hours)}")
    if ext.depends_on:
        lines.append(f"  depends_on: {', '.join(ext.depends_on)}")
    if ext.inputs_location:
        lines.append(f"  inputs_location: {ext.inputs_location}")
    if ext.checkpoint_dir:
        lines.append(f"  checkpoint_dir: {ext.checkpoint_dir}  (SKYFORM_CHECKPOINT_DIR)")
    if ext.arch:
        lines.append(f"  arch: {ext.arch}")
    return lines


def _resources(task: TaskSpec) -> list[str]:
    groups = task.resources.groups
    if len(groups) == 1 and len(groups[0]) == 1:
        return [f"  resources: {format_request(groups[0][0])}"]
    if len(groups) == 1:
        return ["  resources (best of):", *(f"    - {format_request(r)}" for r in groups[0])]
    lines = ["  resources (in order of preference):"]
    for rank, group in enumerate(groups, start=1):
        if len(group) == 1:
            lines.append(f"    {rank}. {format_request(group[0])}")
        else:
            lines.append(f"    {rank}. best of:")
            lines += [f"       - {format_request(r)}" for r in group]
    return lines


def format_request(req: ResourceRequest) -> str:
    """`aws/us-east-1 · V100:8 · cpus 8+ · memory 32+ GiB · spot` ('any infra' when open)."""
    parts = [req.infra if req.infra != "*" else "any infra"]
    if req.accelerator:
        parts.append(f"{req.accelerator}:{req.accelerator_count or 1:g}")
    if req.instance_type:
        parts.append(req.instance_type)
    if req.cpus:
        parts.append(f"cpus {req.cpus}")
    if req.memory:
        parts.append(f"memory {req.memory} GiB")
    if req.use_spot:
        parts.append("spot")
    if req.disk_size != DEFAULT_DISK_SIZE_GB or req.disk_tier:
        tier = f" ({req.disk_tier})" if req.disk_tier else ""
        parts.append(f"disk {req.disk_size} GB{tier}")
    if req.network_tier:
        parts.append(f"network {req.network_tier}")
    if req.ports:
        parts.append(f"ports {','.join(req.ports)}")
    if req.image_id:
        image = req.image_id if isinstance(req.image_id, str) else "per-region image"
        parts.append(f"image {image}")
    if req.labels:
        parts.append("labels " + ",".join(f"{k}={v}" for k, v in req.labels.items()))
    if req.max_hourly_cost is not None:
        parts.append(f"max ${req.max_hourly_cost:g}/h")
    if req.job_recovery:
        recovery = req.job_recovery
        parts.append(
            f"recovery {recovery.strategy or 'default'}"
            + (
                f" (max {recovery.max_restarts_on_errors} restarts)"
                if recovery.max_restarts_on_errors
                else ""
            )
        )
    if req.autostop:
        stop = req.autostop
        parts.append(
            f"autostop {stop.idle_minutes}m{' (down)' if stop.down else ''}"
            if stop.enabled
            else "autostop off"
        )
    return " · ".join(parts)


def _mapping(title: str, values: dict[str, str]) -> list[str]:
    if not values:
        return []
    return [f"  {title}:", *(f"    {k}: {v}" for k, v in values.items())]


def _mount(mount: FileMount) -> str:
    if mount.source is not None and mount.name is None and mount.store is None:
        source = mount.source if isinstance(mount.source, str) else ", ".join(mount.source)
        return source
    bits = []
    if mount.name:
        bits.append(f"bucket {mount.name}")
    if mount.source:
        source = mount.source if isinstance(mount.source, str) else ", ".join(mount.source)
        bits.append(f"from {source}")
    if mount.store:
        bits.append(f"on {mount.store}")
    if mount.mode:
        bits.append(f"({mount.mode})")
    return " ".join(bits)


def _workdir(workdir: str | GitWorkdir) -> str:
    if isinstance(workdir, str):
        return workdir
    return f"{workdir.url}" + (f" @ {workdir.ref}" if workdir.ref else "")


def _script(script: str) -> str:
    lines = [line for line in script_lines(script.strip()) if line.strip()]
    if len(lines) == 1 and len(lines[0]) <= 70:
        return lines[0]
    first = lines[0] if lines else ""
    first = first if len(first) <= 50 else first[:47] + "..."
    return f"{len(lines)} lines ({first})"


def _hours(hours: float | dict[str, float]) -> str:
    if isinstance(hours, float | int):
        return f"{hours:g} h"
    return ", ".join(f"{k} {v:g} h" for k, v in hours.items())
