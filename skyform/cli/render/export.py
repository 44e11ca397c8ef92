"""`skyform export` output."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from skyform.cli.render.console import make_console
from skyform.cli.render.output import print_json

if TYPE_CHECKING:  # nothing outside skyform/stacks/pulumi imports it at module level
    from skyform.stacks.pulumi.export import ExportResult


def render_export(result: ExportResult, *, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "directory": str(result.directory),
                "projects": [
                    {
                        "cluster": p.cluster,
                        "cloud": p.cloud,
                        "infra": p.infra,
                        "directory": str(p.directory),
                        "files": p.files,
                    }
                    for p in result.projects
                ],
                "skipped": [
                    {"cluster": s.cluster, "infra": s.infra, "reason": s.reason}
                    for s in result.skipped
                ],
            }
        )
        return
    console = make_console()
    for p in result.projects:
        console.print(
            f"[green]exported[/] [bold]{escape(p.cluster)}[/] ({escape(p.infra)}) "
            f"→ {escape(str(p.directory))}/",
            soft_wrap=True,  # paths and commands stay whole, for copy and paste
        )
        console.print(f"    {escape(', '.join(p.files))}")
    for s in result.skipped:
        console.print(
            f"[yellow]skipped[/]  [bold]{escape(s.cluster)}[/] ({escape(s.infra)}): "
            f"{escape(s.reason)}",
            soft_wrap=True,
        )
    if not result.projects:
        console.print("Nothing to export: the plan has no aws, gcp or kubernetes clusters.")
        return
    first = result.projects[0]
    console.print("\nRun one with the Pulumi CLI (its README.md says more):")
    console.print(
        f"  cd {escape(str(first.directory))} && pulumi stack init {escape(first.cluster)} "
        "&& pulumi up",
        soft_wrap=True,
    )
