"""The Kubernetes lines of a plan (text and markdown): where it looked, and why not elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the models, or the strict reader's views of them (plan/planview.py)
    from skyform.plan.model import Plan


def kubernetes_lines(plan: Plan) -> list[str]:
    """`Kubernetes: planned on lab (5 nodes: …).` then one line per reason something was left
    out; nothing for a plan whose tasks cannot run on Kubernetes."""
    k8s = plan.kubernetes
    if k8s is None or plan.destroy:
        return []
    usable = [c for c in k8s.contexts if c.usable]
    if not usable:
        return [f"Kubernetes was not considered: {note}" for note in k8s.not_considered] or [
            "Kubernetes was not considered: no context to plan on"
        ]
    shown = ", ".join(f"{c.name} ({c.nodes})" for c in usable)
    lines = [f"Kubernetes: planned on {shown}."]
    lines += [f"Kubernetes, not considered: {note}" for note in k8s.not_considered]
    return lines
