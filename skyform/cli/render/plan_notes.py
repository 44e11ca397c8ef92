"""Sentences the text and markdown plans both print, so they say the same thing. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyform.cli.render import fmt

if TYPE_CHECKING:  # the models, or the strict reader's views of them (plan/planview.py)
    from skyform.plan.model import ClusterChange, EgressFlow, HostProbe, TaskPlacement


def change_notes(change: ClusterChange, placement: TaskPlacement | None) -> list[str]:
    """What a reviewer must not miss about a change: whose cluster it is, where its name
    came from (text and markdown say the same)."""
    notes = []
    if change.takes_over:
        notes.append(
            f"(!) takes over a cluster that belongs to {change.takes_over}: "
            "apply asks first, or needs --take-over"
        )
    shown = change.after.shown_as if change.after is not None else None
    if shown:
        notes.append(
            f'shown as "{shown}", as typed; the engines, state and paths name it '
            f'"{change.cluster}" (names that differ only by case, "_" or "." are one cluster)'
        )
    elif placement is not None and placement.cluster_name_from:
        notes.append(
            f'name "{change.cluster}" made from {placement.cluster_name_from}, '
            "which is not a valid cluster name (lower-case letters, digits, dashes)"
        )
    return notes


def egress_cost(flow: EgressFlow) -> str:
    """The flow's cost; an upper bound when the source's region is not known."""
    if not flow.upper_bound:
        return fmt.usd(flow.cost)
    cloud = flow.src_infra.split("/")[0]
    return (
        f"at most {fmt.usd(flow.cost)} (the data's region is unknown, so the dearest "
        f"{cloud} rate is used; pin it with `skyform: {{inputs_location: {cloud}/REGION}}`)"
    )


def why_chosen(placement: TaskPlacement, objective: str) -> str | None:
    """Why the chosen row is not the cheapest one to run, when it is not."""
    chosen = next((a for a in placement.alternatives if a.chosen), None)
    if chosen is None:
        return None
    cheaper = [a for a in placement.alternatives if a.estimated_cost < chosen.estimated_cost - 1e-9]
    if not cheaper:
        return None
    if objective == "time":
        return "Chosen although dearer to run: it finishes sooner (objective: time)."
    best = min(cheaper, key=lambda a: a.estimated_cost)
    if chosen.estimated_cost + chosen.egress_cost <= best.estimated_cost + best.egress_cost + 1e-9:
        return (
            f"Chosen although dearer to run: moving the task's inputs to {best.offer.infra} "
            f"would cost {fmt.usd(best.egress_cost)}, here {fmt.usd(chosen.egress_cost)} "
            "(EGRESS)."
        )
    return (
        "Chosen although dearer to run: the pipeline costs less in all this way "
        "(data moved between tasks, see Egress)."
    )


def probe_line(probe: HostProbe) -> str:
    """`lab/10.0.0.5:22: 16 vCPUs, 62.8 GiB, x86_64, A100:2 (probed 2025-01-02T03:04:05Z)`."""
    parts = [
        f"{fmt.plain(probe.cpus)} vCPUs" if probe.cpus is not None else "vCPUs unknown",
        f"{fmt.plain(probe.memory_gib)} GiB" if probe.memory_gib is not None else "memory unknown",
        probe.arch or "arch unknown",
        probe.accelerators or "no GPU",
    ]
    return f"{probe.host.removeprefix('ssh/')}: {', '.join(parts)} (probed {probe.probed_at})"
