"""Managed jobs on the terminal: the queue, revisions, and logs across recoveries."""

from __future__ import annotations

import time

from rich import box
from rich.markup import escape
from rich.table import Table

from skyform.cli.render.clusters import duration
from skyform.cli.render.console import make_console
from skyform.cli.render.output import print_json
from skyform.cli.render.progress import print_log_line
from skyform.cli.render.status_table import ago
from skyform.state.managed import ManagedJobRecord, ManagedJobStatus
from skyform.state.revisions import Revision

STYLE = {
    ManagedJobStatus.SUCCEEDED: "green",
    ManagedJobStatus.RUNNING: "cyan",
    ManagedJobStatus.STARTING: "cyan",
    ManagedJobStatus.RECOVERING: "yellow",
    ManagedJobStatus.CANCELLING: "yellow",
    ManagedJobStatus.CANCELLED: "yellow",
}


def exit_code_for(status: ManagedJobStatus) -> int:
    if status is ManagedJobStatus.SUCCEEDED:
        return 0
    return 4 if status is ManagedJobStatus.FAILED_NO_RESOURCE else 1


def render_launched(record: ManagedJobRecord) -> None:
    console = make_console()
    console.print(
        f"Managed job [bold]{record.id}[/] ({escape(record.name)}) submitted: "
        f"{len(record.tasks)} task(s), recovery {record.strategy}, "
        f"max_restarts_on_errors {record.max_restarts_on_errors}."
    )
    console.print(
        f"  follow: skyform jobs logs {record.id} · "
        f"plans: skyform jobs plans {record.id} · cancel: skyform jobs cancel "
        f"{record.id}"
    )


def render_detached(job_id: int) -> None:
    """After Ctrl-C while following: the job is not stopped, only the streaming is."""
    console = make_console(stderr=True)
    console.print(
        f"[yellow]Stopped following managed job {job_id}; the job keeps running (its "
        "controller goes on without this command).[/]",
        soft_wrap=True,
    )
    console.print(
        f"  re-attach: skyform jobs logs {job_id} · cancel it: skyform jobs cancel {job_id}",
        soft_wrap=True,
    )


def _resources(record: ManagedJobRecord) -> str:
    current = next(
        (
            t
            for t in record.tasks
            if t.offer is not None and t.status not in (ManagedJobStatus.SUCCEEDED,)
        ),
        None,
    ) or next((t for t in reversed(record.tasks) if t.offer is not None), None)
    if current is None or current.offer is None:
        return "-"
    o = current.offer
    return f"{o.infra} {o.instance_type}" + (" [Spot]" if o.spot else "")


def render_jobs_queue(
    records: list[ManagedJobRecord], drivers: dict[int, str], *, as_json: bool
) -> None:
    """`drivers`: job id -> the controller service (user@host:pid) holding the job's lease."""
    if as_json:
        print_json(
            [
                {
                    **r.model_dump(mode="json"),
                    "recoveries": r.recoveries(),
                    "controller": drivers.get(r.id),
                }
                for r in records
            ]
        )
        return
    console = make_console()
    if not records:
        console.print("No managed jobs.")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in (
        "ID",
        "NAME",
        "TASKS",
        "RESOURCES",
        "SUBMITTED",
        "DURATION",
        "#RECOVERIES",
        "STATUS",
        "CONTROLLER",
    ):
        table.add_column(col, no_wrap=True)
    for r in reversed(records):
        done = sum(t.status is ManagedJobStatus.SUCCEEDED for t in r.tasks)
        style = STYLE.get(r.status, "red" if r.status.value.startswith("FAILED") else "white")
        table.add_row(
            str(r.id),
            escape(r.name),
            f"{done}/{len(r.tasks)}",
            escape(_resources(r)),
            ago(r.submitted_at),
            duration(r.submitted_at, r.ended_at),
            str(r.recoveries()),
            f"[{style}]{r.status.value}[/]",
            escape(drivers.get(r.id, "-")),
        )
    console.print(table)
    failed = [r for r in records if r.status.value.startswith("FAILED") and r.reason]
    for r in failed[-3:]:
        console.print(f"  job {r.id}: {escape(r.reason)}", soft_wrap=True)


def render_revisions(job_id: int, revisions: list[Revision], *, as_json: bool) -> None:
    if as_json:  # the fields `jobs plans --json` always gave
        shown = ("revision", "created_at", "reason", "path", "digest")
        print_json([{"job_id": job_id, **{k: getattr(r, k) for k in shown}} for r in revisions])
        return
    console = make_console()
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("REV", "CREATED", "WHY", "PLAN"):
        table.add_column(col, overflow="fold")
    for r in revisions:
        table.add_row(
            str(r.revision),
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created_at)),
            escape(r.reason),
            escape(r.path or "-"),
        )
    console.print(table)
    if len(revisions) > 1:
        console.print(
            f"  compare two: skyform cost diff {revisions[-2].path} {revisions[-1].path}",
            soft_wrap=True,
        )
    console.print(f"  show one: skyform jobs plans {job_id} --show N")


class JobLogPrinter:
    def __init__(self) -> None:
        self.console = make_console()

    def line(self, line) -> None:
        print_log_line(self.console, f"({line.task}, node={line.rank})", line.text)

    def note(self, text: str) -> None:
        self.console.print(f"[bold yellow]── {escape(text)}[/]", soft_wrap=True)
