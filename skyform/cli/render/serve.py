"""A service's plan on the terminal and as a pull-request comment. Pure: ServicePlan -> text."""

from __future__ import annotations

from skyform.serve.plan import ReplicaSlot, ServicePlan

ROLE_MARK = {"spot": "spot", "on-demand": "on-demand", "on-demand fallback": "on-demand (fallback)"}


def _settings(plan: ServicePlan) -> list[tuple[str, str]]:
    return [
        ("Task", plan.task_path),
        ("Replica port", str(plan.port)),
        ("Readiness probe", plan.readiness_probe),
        ("Replica policy", plan.autoscaling),
        ("Spot policy", plan.spot_policy),
        ("Load balancing", plan.load_balancing_policy),
        ("Load balancer", f"{plan.load_balancer} ({plan.scheme})"),
    ]


def _cost_lines(plan: ServicePlan) -> list[str]:
    lines = [
        f"Hourly cost at min ({plan.min_replicas} replicas): ${plan.hourly_cost_at_min:.4f}/h",
        f"Hourly cost at max ({plan.max_replicas} replicas): ${plan.hourly_cost_at_max:.4f}/h",
    ]
    if plan.hourly_cost_worst_case is not None:
        lines.append(
            "Worst case (every spot replica replaced by on-demand fallback): "
            f"${plan.hourly_cost_worst_case:.4f}/h"
        )
    return lines


def _row(slot: ReplicaSlot) -> list[str]:
    nodes = f"{slot.num_nodes}x " if slot.num_nodes > 1 else ""
    return [
        str(slot.slot),
        ROLE_MARK[slot.role],
        slot.runs,
        slot.infra,
        f"{nodes}{slot.instance_type}",
        slot.accelerator or "-",
        f"{slot.hourly_cost:.4f}",
    ]


HEADER = ["#", "ROLE", "RUNS", "INFRA", "INSTANCE", "GPUS", "$/H"]


def service_plan_text(plan: ServicePlan) -> str:
    lines = [f"Service {plan.service}"]
    width = max(len(k) for k, _ in _settings(plan))
    lines += [f"  {key.ljust(width)}  {value}" for key, value in _settings(plan)]
    lines += ["", "Replicas"]
    rows = [HEADER, *(_row(s) for s in plan.replicas)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    for row in rows:
        lines.append(
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        )
    lines += ["", *_cost_lines(plan)]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def service_plan_markdown(plan: ServicePlan) -> str:
    lines = [f"### Service `{plan.service}`", ""]
    lines += [f"- **{key}:** {_cell(value)}" for key, value in _settings(plan)]
    lines += [
        "",
        "| " + " | ".join(HEADER) + " |",
        "|--:|---|---|---|---|---|--:|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in _row(s)) + " |" for s in plan.replicas]
    lines += ["", *(f"- **{line}**" for line in _cost_lines(plan))]
    return "\n".join(lines) + "\n"
