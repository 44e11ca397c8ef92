"""A service's plan on the terminal and as a pull-request comment. Pure: ServicePlan -> text."""

from __future__ import annotations

import time

from skyform.cli.render.visible import visible
from skyform.serve.plan import ReplicaSlot, ServicePlan
from skyform.serve.revisions import ServiceRevision
from skyform.serve.state import ReplicaRecord, ServiceRecord
from skyform.serve.updates import UpdatePreview

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
    lines += ["  " + line for line in _table([HEADER, *(_row(s) for s in plan.replicas)])]
    lines += ["", *_cost_lines(plan)]
    return visible("\n".join(lines) + "\n")


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
    return visible("\n".join(lines) + "\n")


def render_up(record: ServiceRecord) -> None:
    from skyform.cli.render.console import make_console
    from skyform.cli.render.lines import escape

    console = make_console()
    name = escape(record.name)
    console.print(f"Service name: {name}", soft_wrap=True, highlight=False)
    console.print(f"Endpoint URL: {escape(str(record.endpoint))}", soft_wrap=True, highlight=False)
    console.print(
        f"  status: skyform serve status {name} · logs: skyform serve logs "
        f"{name} --controller · down: skyform serve down {name}",
        soft_wrap=True,
        highlight=False,
    )


def _since(start: float | None, now: float) -> str:
    if start is None:
        return "-"
    seconds = int(max(0, now - start))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m"


def _table(rows: list[list[str]]) -> list[str]:
    """Columns two spaces apart; a cell is one line (its controls and newlines escaped)."""
    rows = [[visible(c, lines=False) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


FAILED_REPLICA = ("FAILED", "FAILED_CLEANUP", "FAILED_INITIAL_DELAY", "FAILED_PROBING",
                  "FAILED_PROVISION", "UNKNOWN")  # fmt: skip
TRUNCATE = 10


def status_text(records: list[ServiceRecord], *, verbose: bool, now: float) -> str:
    """SkyPilot's two tables (serve_utils.format_service_table / _format_replica_table)."""
    if not records:
        return "No existing services.\n"
    head = ["NAME", "VERSION", "UPTIME", "STATUS", "REPLICAS", "ENDPOINT"]
    if verbose:
        head += ["AUTOSCALING_POLICY", "LOAD_BALANCING_POLICY"]
    rows = [head]
    for r in records:
        ready = sum(1 for x in r.replicas if x.status == "READY")
        counted = sum(1 for x in r.replicas if x.status not in FAILED_REPLICA)
        versions = r.active_versions or sorted(
            {x.version for x in r.replicas if x.status == "READY"}
        )
        row = [
            r.name,
            ",".join(map(str, versions)) or "-",
            _since(r.ready_since, now),
            r.status.value,
            f"{ready}/{counted}",
            r.endpoint or "-",
        ]
        if verbose:
            row += [r.autoscaling or "-", r.load_balancing_policy]
        rows.append(row)
    lines = ["Services", *_table(rows), "", "Service Replicas"]
    replica_rows = [["SERVICE_NAME", "ID", "VERSION", "ENDPOINT", "LAUNCHED", "INFRA", "STATUS"]]
    every = [(r, x) for r in records for x in r.replicas]
    shown = every if verbose else every[:TRUNCATE]
    for r, x in shown:
        launched = "-" if x.launched_at is None else f"{_since(x.launched_at, now)} ago"
        replica_rows.append(
            [r.name, str(x.replica_id), str(x.version), x.endpoint or "-", launched,
             _infra(x.infra, x.role), x.status]
        )  # fmt: skip
    lines += _table(replica_rows) if len(replica_rows) > 1 else ["No replicas."]
    if len(every) > len(shown):
        lines.append(f"... {len(every) - len(shown)} more (see all with -v)")
    lines += _failures([(r.name, x) for r, x in shown if x.status in FAILED_REPLICA])
    return visible("\n".join(lines) + "\n")


def _failures(failed: list[tuple[str, ReplicaRecord]]) -> list[str]:
    """Why each failed replica failed: its reason, the exit code of the user's process, the
    last lines of its log, and where to read the rest."""
    if not failed:
        return []
    lines = ["", "Failed replicas"]
    for service, x in failed:
        why = [x.reason] if x.reason else []
        if x.exit_code is not None and f"code {x.exit_code}" not in x.reason:
            why.append(f"exit code {x.exit_code}")  # the reason did not say it
        lines.append(
            f"  {visible(service, lines=False)} {x.replica_id} ({x.status}): "
            + visible("; ".join(why) or "no reason recorded", lines=False)
        )
        if x.last_lines:
            lines.append("    last lines of its log:")
            lines += [f"    | {visible(text, lines=False)}" for text in x.last_lines]
        if x.log_kept:
            lines.append(f"    its log: skyform serve logs {service} {x.replica_id}")
    return lines


def _infra(infra: str | None, role: str) -> str:
    """Where a replica runs; spot and on-demand fallback replicas say so."""
    mark = {"spot": " [spot]", "on-demand fallback": " [fallback]"}.get(role, "")
    return (infra or "-") + mark


def render_status(records: list[ServiceRecord], *, verbose: bool) -> None:
    import sys

    sys.stdout.write(status_text(records, verbose=verbose, now=time.time()))


UPDATE_MARK = {"relabel": "~", "replace": "-/+", "remove": "-"}


def update_text(preview: UpdatePreview) -> str:
    """The update's diff against the running service, Terraform style."""
    when = (
        "each drains once a new replica is READY"
        if preview.mode == "rolling"
        else "all drain once the new version has its min replicas READY"
    )
    lines = [
        f"Update {preview.service}: version {preview.old_version} -> {preview.new_version} "
        f"({preview.mode})"
    ]
    lines.append(
        f"  Target: {preview.target} replica(s) of version {preview.new_version} "
        f"({preview.why_target})"
    )
    if preview.why_new:
        lines.append(f"  New replicas: {preview.why_new}")
    for change in preview.changes:
        mark = UPDATE_MARK[change.action]
        what = {
            "relabel": f"relabelled to version {preview.new_version} in place (no relaunch)",
            "replace": f"replaced; serves version {change.version} until then ({when})",
            "remove": "removed (the new version wants fewer replicas)",
        }[change.action]
        lines.append(
            f"  {mark.ljust(3)} replica {change.replica_id} (v{change.version}, "
            f"{change.status}): {what}"
        )
    if preview.launch:
        lines.append(f"  +   {preview.launch} new replica(s) of version {preview.new_version}")
    lines.append(
        f"Update: {preview.count('relabel')} to relabel, {preview.count('replace')} to replace, "
        f"{preview.launch} to launch, {preview.count('remove')} to remove."
    )
    return visible("\n".join(lines) + "\n")


def _planned(revision: ServiceRevision) -> str:
    parts = [
        f"{r.replica_id}:v{r.version} {r.role}{' @' + r.infra if r.infra else ''}"
        for r in revision.replicas
    ]
    return ", ".join(parts) or "none"


def revisions_text(found: list[ServiceRevision]) -> str:
    if not found:
        return "No plan revisions yet.\n"
    rows = [["REV", "CREATED", "KIND", "VERSION", "TARGET", "REPLICAS", "WHY"]]
    for r in found:
        rows.append(
            [
                str(r.revision),
                time.strftime("%H:%M:%S", time.localtime(r.created_at)),
                r.kind,
                str(r.version),
                str(r.target),
                _planned(r),
                r.reason,
            ]
        )
    return "\n".join(_table(rows)) + "\n"
