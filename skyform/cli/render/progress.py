"""Live progress of apply/exec/down: one line per stage, per-node events, job logs.

Plain lines (no cursor tricks) so output reads the same in a terminal, a CI log or a pipe.
Events arrive from worker threads; rich's Console serializes the writes.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.markup import escape

from skyform.cli.render.console import make_console
from skyform.cli.render.visible import visible

STAGE_LABELS = {
    "provision": "provisioning",
    "resume": "carrying on with the unfinished apply",
    "destroy": "destroying",
    "update": "updating in place",
    "run": "running the job",
    "noop": "no changes",
    "rerun": "running the job again",
    "stop": "stopped",
}


def print_log_line(console, prefix: str, text: str) -> None:
    """One line of a job's output, after its dim `prefix`: the user's program talking to
    the user's terminal, so printed as it is (colours, and what rich itself drops), not
    through render/visible.py as text from plans and nodes is; the prefix is."""
    from rich.text import Text

    line = Text.assemble((visible(prefix), "dim"), " ", text)
    console.print(line, soft_wrap=True, highlight=False)


class ConsoleProgress:
    def __init__(
        self, *, quiet_nodes: bool = False, names: Mapping[str, str] | None = None
    ) -> None:
        self.console = make_console()
        self.quiet_nodes = quiet_nodes
        # engine-safe name -> the name the user typed (`-c my_cluster`): what lines show
        self.names = dict(names or {})

    def shown(self, cluster: str) -> str:
        return self.names.get(cluster, cluster)

    def stage(self, cluster: str, stage: str, detail: str = "") -> None:
        cluster = self.shown(cluster)
        label = STAGE_LABELS.get(stage, stage)
        tail = f": {escape(detail)}" if detail else ""
        self.console.print(f"[bold cyan]{escape(cluster)}[/] {label}{tail}", soft_wrap=True)

    def event(self, cluster: str, stage: str, rank: int | None, message: str) -> None:
        if self.quiet_nodes:
            return
        cluster = self.shown(cluster)
        who = f"node {rank}" if rank is not None else stage
        where = f"{stage} " if rank is not None else ""
        self.console.print(
            f"[dim]  {escape(cluster)} {who}: {where}{escape(message)}[/]", soft_wrap=True
        )

    def log(self, cluster: str, line) -> None:
        prefix = f"({self.shown(cluster)}, node={line.rank}{', setup' if line.setup else ''})"
        print_log_line(self.console, prefix, line.text)

    def job_end(self, job) -> None:
        """The line after a job's output: how it stands (always the last line)."""
        codes = ", ".join(
            f"node {r}: exit {c}" for r, c in sorted(job.exit_codes.items()) if c not in (0, None)
        )
        tail = f" ({codes})" if codes else ""
        cluster = self.shown(job.cluster)
        if not job.status.is_terminal:
            tail = f" (follow it: skyform logs {cluster} {job.job_id} --follow)"
        self.console.print(
            f"── job {job.job_id} on {escape(cluster)}: {job.status.value}{escape(tail)}",
            soft_wrap=True,
            highlight=False,
        )
