"""`skyform serve ...`: services, SkyServe's verbs (plan today; up/status/down to come)."""

from __future__ import annotations

from pathlib import Path

import typer

from skyform.cli import options

serve_app = typer.Typer(
    help="Services: replicas behind a load balancer (SkyServe's `sky serve`).",
    no_args_is_help=True,
)


# SkyServe verbs not built yet: one line each, exit 1, pointing at what exists
NOT_YET = ("up", "update", "status", "logs", "down")


def register(app: typer.Typer) -> None:
    app.add_typer(serve_app, name="serve")
    for verb in NOT_YET:
        serve_app.command(
            verb,
            hidden=True,
            add_help_option=False,
            context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        )(_not_yet(verb))


def _not_yet(verb: str):
    def command(ctx: typer.Context) -> None:
        from skyform.errors import SkyformError

        del ctx
        raise SkyformError(
            f"skyform has no `serve {verb}` yet; `skyform serve plan TASK` shows the "
            "service's plan (replicas, placements, cost)"
        )

    command.__doc__ = f"Not in skyform yet: SkyPilot's `sky serve {verb}`."
    return command


@serve_app.command("plan")
@options.resource_flags
def plan(
    task_file: Path = typer.Argument(..., help="Service YAML (a SkyPilot task with service:)."),
    service_name: str | None = typer.Option(
        None, "--service-name", "-n", help="The service's name (default: the task's name)."
    ),
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    json_out: bool = options.JSON,
    markdown: bool = options.MARKDOWN,
    overrides=None,
) -> int:
    """The service's plan without applying it: load balancer, each replica's placement, cost."""
    import sys

    from skyform.cli.render.messages import print_warnings
    from skyform.cli.render.output import print_json
    from skyform.cli.render.serve import service_plan_markdown, service_plan_text
    from skyform.errors import SkyformError
    from skyform.serve.planning import plan_service_file

    if json_out and markdown:
        raise SkyformError("--json and --markdown are exclusive: pick one output format")
    result = plan_service_file(
        task_file,
        name=service_name,
        load_kwargs=options.task_inputs(env, env_file, secret, overrides),
    )
    print_warnings(result.warnings)
    if json_out:
        print_json(result.plan.model_dump(mode="json"))
    elif markdown:
        sys.stdout.write(service_plan_markdown(result.plan))
    else:
        sys.stdout.write(service_plan_text(result.plan))
    return 0
