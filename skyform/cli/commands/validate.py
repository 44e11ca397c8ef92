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
    from skyform.ops.validate import validate as validate_task

    found = validate_task(task_file, options.task_inputs(env, env_file, secret))
    render_validation(found.dag, found.warnings, found.digest, as_json=json_out)
