"""Options shared by several verbs (task inputs, output formats). Defined once, reused."""

from __future__ import annotations

from pathlib import Path

import typer

ENV = typer.Option(
    [], "--env", metavar="K[=V]", help="Set an env var (K alone: from your shell). Repeatable."
)
ENV_FILE = typer.Option(
    [], "--env-file", metavar="FILE", help="Read env vars from a dotenv file. Repeatable."
)
SECRET = typer.Option(
    [], "--secret", metavar="K[=V]", help="Set a secret (K alone: from your shell). Repeatable."
)
JSON = typer.Option(False, "--json", help="Machine-readable JSON on stdout.")
MARKDOWN = typer.Option(False, "--markdown", help="Render as a pull-request comment (markdown).")
YES = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")


def task_inputs(env: list[str], env_file: list[Path], secret: list[str]) -> dict:
    """Keyword arguments for skyform.spec.load_task from the shared options."""
    return {"env_overrides": env, "env_files": env_file, "secret_overrides": secret}


def is_plan_file(path: Path) -> bool:
    """A saved plan (JSON) rather than a task YAML: by suffix, else by its first byte."""
    if path.suffix == ".json":
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(64).lstrip().startswith(b"{")
    except OSError:
        return False
