"""`skyform validate TASK.yaml`: parse and normalize a task file; change nothing."""

from __future__ import annotations

from pathlib import Path

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)


def validate(
    task_file: Path = typer.Argument(..., help="Task YAML (SkyPilot format; may be a pipeline)."),
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    json_out: bool = typer.Option(
        False, "--json", help="Print the normalized task as JSON (secrets redacted)."
    ),
) -> None:
    """Check a task file and print it normalized: resources, envs, pipeline shape, warnings."""
    from skyform.cli.render.task import render_validation
    from skyform.spec import check_supported, load_task, task_digest

    dag = load_task(task_file, **options.task_inputs(env, env_file, secret))
    warnings = check_supported(dag)
    render_validation(dag, warnings, task_digest(dag), as_json=json_out)
