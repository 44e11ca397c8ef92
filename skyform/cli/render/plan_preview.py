"""`plan --preview`: the engine's own preview per cluster (ops/preview.py), as text, as a
PR comment's markdown and as JSON. Pure: previews in, text out. Every name, path and value
comes from the engine or the program and is shown through render/visible.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from skyform.cli.render.plan_job import fence
from skyform.cli.render.visible import visible
from skyform.stacks.preview import SECRET, STEP_OPS

if TYPE_CHECKING:
    from skyform.ops.preview import ClusterPreview
    from skyform.stacks.preview import PropertyChange, ResourceStep

SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-"}
KIND_SYMBOL = {"add": "+", "update": "~", "delete": "-"}
TITLE = "Engine preview"
ABOUT = (
    "what the engine would do to each cluster's resources now; shown only, never saved "
    "with the plan: apply asks the engine again"
)


def counts(preview: ClusterPreview) -> str:
    text = ", ".join(f"{preview.count(op)} to {op}" for op in STEP_OPS)
    return text + (f" ({preview.unchanged} unchanged)" if preview.unchanged else "")


def _value(change: PropertyChange) -> str:
    old, new = change.old, change.new
    if change.kind == "add":
        return f" = {new}" if new is not None else ""
    if change.kind == "delete":
        return f" = {old} -> null" if old is not None else ""
    if old is not None and old == new:  # a secret, or a value only its type changed
        return f" = {old}" if old == SECRET else ""
    if old is None and new is None:
        return ""
    return f" = {old if old is not None else '(unknown)'} -> {new or '(unknown)'}"


def property_line(change: PropertyChange) -> str:
    note = "  # forces replacement" if change.replaces else ""
    return f"{KIND_SYMBOL[change.kind]} {change.path}{_value(change)}{note}"


def step_lines(step: ResourceStep, *, align: bool = True) -> list[str]:
    """`+ kubernetes:core/v1:Pod node-0`, then its changed properties indented; `align`:
    the symbols right-aligned as the plan's (a ```diff block wants them first)."""
    symbol = f"{SYMBOL[step.op]:>3}" if align else SYMBOL[step.op]
    lines = [f"{symbol} {step.type} {step.name}"]
    lines += [f"        {property_line(p)}" for p in step.properties]
    return [visible(line, lines=False) for line in lines]


def outcome(preview: ClusterPreview) -> str:
    """What the engine said of the cluster, in one line (after its name)."""
    if preview.status == "no-engine":
        return f"({preview.reason})"
    if preview.status == "not-run":
        return preview.reason
    if preview.status == "unavailable":
        return f"no engine preview: {preview.reason}"
    return counts(preview)


def text_lines(previews: Sequence[ClusterPreview]) -> list[str]:
    """The text section: a headline per cluster, its steps, and why a preview is missing or
    stopped."""
    lines = [f"{TITLE} ({ABOUT}):"]
    for preview in previews:
        where = f'cluster "{preview.cluster}" ({preview.infra})'
        lines.append(visible(f"  # {where}: {outcome(preview)}", lines=False))
        for step in preview.steps:
            lines += [f"  {line}" for line in step_lines(step)]
        if preview.status == "incomplete":
            lines.append(
                visible(f"    the engine's preview stopped: {preview.reason}", lines=False)
            )
    return lines


def markdown_lines(previews: Sequence[ClusterPreview]) -> list[str]:
    """The PR comment's section: a headline per cluster, its steps in a ```diff block."""
    from skyform.cli.render.plan_markdown import cell

    lines = [f"#### {TITLE}", "", f"{ABOUT[0].upper()}{ABOUT[1:]}.", ""]
    for preview in previews:
        where = f"**`{preview.cluster}`** ({cell(visible(preview.infra, lines=False))})"
        lines += [f"{where}: {cell(visible(outcome(preview), lines=False))}", ""]
        if preview.status == "incomplete":
            lines += [f"⚠️ The engine's preview stopped: {cell(visible(preview.reason))}", ""]
        if preview.steps:
            steps = [line for step in preview.steps for line in step_lines(step, align=False)]
            lines += [*fence("\n".join(steps), "diff"), ""]
    return lines


def json_data(previews: Sequence[ClusterPreview]) -> list[dict[str, Any]]:
    return [p.model_dump(mode="json") for p in previews]
