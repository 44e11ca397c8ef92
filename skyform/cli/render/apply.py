"""The end of `skyform apply`: what happened to each cluster, Terraform's closing line."""

from __future__ import annotations

from rich.markup import escape

from skyform.cli.render.console import make_console
from skyform.ops.applier import ClusterOutcome
from skyform.plan.model import Plan
from skyform.state.models import JobStatus

STATUS_STYLE = {
    JobStatus.SUCCEEDED: "green",
    JobStatus.RUNNING: "cyan",
    JobStatus.FAILED: "red",
    JobStatus.FAILED_SETUP: "red",
    JobStatus.CANCELLED: "yellow",
}


def render_apply_result(
    plan: Plan, outcomes: list[ClusterOutcome], *, detach: bool, verb: str = "Apply"
) -> None:
    console = make_console()
    s = plan.summary
    console.print()
    names = plan.shown_names()
    for o in outcomes:
        cluster = names.get(o.cluster, o.cluster)
        if o.job is None:
            console.print(f"  {escape(cluster)}: {escape(o.message)}")
            continue
        style = STATUS_STYLE.get(o.job.status, "white")
        codes = ", ".join(
            f"node {r}: {c}" for r, c in sorted(o.job.exit_codes.items()) if c not in (0, None)
        )
        console.print(
            f"  {escape(cluster)}: job {o.job.job_id} [{style}]{o.job.status.value}[/]"
            + (f" ({escape(codes)})" if codes else ""),
            soft_wrap=True,
        )
        if detach and not o.job.status.is_terminal:
            console.print(f"    follow it: skyform logs {escape(cluster)} {o.job.job_id} --follow")
        elif o.failed:
            console.print(f"    see why: skyform logs {escape(cluster)} {o.job.job_id}")
    failed = [o for o in outcomes if o.failed]
    result = "failed" if failed else "complete"
    style = "red" if failed else "green"
    buckets = s.buckets_text(done=True)
    console.print(
        f"\n[bold {style}]{verb} {result}![/] Clusters: {s.add} added, {s.change} changed, "
        f"{s.destroy} destroyed." + (f" {buckets}" if buckets else ""),
        soft_wrap=True,
    )
