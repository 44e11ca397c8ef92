"""`skyform show PLAN.json`: render a saved plan for people, PR comments or programs."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command("show")(show)


def show(
    plan_file: Path = typer.Argument(..., help="A plan written by `skyform plan -o`."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan model as JSON."),
    markdown: bool = typer.Option(False, "--markdown", help="Render a pull-request comment."),
) -> None:
    """Show a saved plan: Terraform-style text, --json, or --markdown for a PR comment."""
    from skyform.cli.render.plan_output import emit_plan
    from skyform.errors import SkyformError
    from skyform.ops import planfiles

    if json_out and markdown:
        raise SkyformError("--json and --markdown are exclusive: pick one output format")
    if plan_file.suffix in (".yaml", ".yml") and plan_file.is_file():
        import shlex

        task = shlex.quote(str(plan_file))
        raise SkyformError(
            f"{task} is a task file; show prints a saved plan",
            f"Plan it first: skyform plan {task} -o plan.json, then: skyform show plan.json "
            f"(or see the task itself: skyform validate {task})",
        )
    plan, _ = planfiles.read(plan_file)
    emit_plan(plan, as_json=json_out, markdown=markdown)
