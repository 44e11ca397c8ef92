"""`skyform serve ...`: services, SkyServe's verbs: plan, up, update, status, plans, logs, down."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from skyform.cli import options
from skyform.cli.groups import verb_group

serve_app, register = verb_group(
    "serve",
    "Services: replicas behind a load balancer (SkyServe's `sky serve`).",
)


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
    from skyform.cli.render.messages import print_warnings
    from skyform.cli.render.output import print_json
    from skyform.cli.render.serve import service_plan_markdown, service_plan_text
    from skyform.errors import SkyformError
    from skyform.ops.serve.plan import plan_service_file

    if json_out and markdown:
        raise SkyformError("--json and --markdown are exclusive: pick one output format")
    result = plan_service_file(
        task_file,
        name=service_name,
        inputs=options.task_inputs(env, env_file, secret, overrides),
    )
    print_warnings(result.warnings)
    if json_out:
        print_json(result.plan.model_dump(mode="json"))
    elif markdown:
        sys.stdout.write(service_plan_markdown(result.plan))
    else:
        sys.stdout.write(service_plan_text(result.plan))
    return 0


@serve_app.command("up")
@options.resource_flags
def up(
    task_file: Path = typer.Argument(..., help="Service YAML (a SkyPilot task with service:)."),
    service_name: str | None = typer.Option(
        None, "--service-name", "-n", help="The service's name (default: the task's name)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    overrides=None,
) -> int:
    """Bring a service up: its plan, a controller, the load balancer and its replicas."""
    from skyform.cli.prompts import confirm_on_terminal
    from skyform.cli.render.messages import print_warnings
    from skyform.cli.render.serve import render_up, service_plan_text
    from skyform.ops.serve import service
    from skyform.ops.serve.plan import envs_and_secrets, plan_service_file

    inputs = options.task_inputs(env, env_file, secret, overrides)
    result = plan_service_file(task_file, name=service_name, inputs=inputs)
    print_warnings(result.warnings)
    sys.stdout.write(service_plan_text(result.plan))
    service.check_can_serve(result)
    confirm_on_terminal(f"Bring up service {result.plan.service}?", yes=yes)
    envs, secrets = envs_and_secrets(env, env_file, secret)
    recorded = overrides.recorded(task_file.resolve().parent) if overrides else {}
    record = service.up(
        result, task_file, envs, secrets, recorded, emit=lambda line: typer.echo(line, err=True)
    )
    render_up(record)
    return 0


@serve_app.command("update")
@options.resource_flags
def update(
    service_name: str = typer.Argument(..., help="The running service."),
    task_file: Path = typer.Argument(..., help="The service's new YAML."),
    mode: str = typer.Option(
        "rolling",
        "--mode",
        help="rolling: replace replicas one by one; blue_green: switch when the new ones "
        "are READY.",
        case_sensitive=False,
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    overrides=None,
) -> int:
    """Update a service to a new version: shows what happens to each replica, then rolls it
    out (rolled back by itself if the new version never becomes READY)."""
    from skyform.cli.prompts import confirm_on_terminal
    from skyform.cli.render.messages import print_warnings
    from skyform.cli.render.serve import service_plan_text, update_text
    from skyform.ops.serve import service
    from skyform.ops.serve.plan import envs_and_secrets, plan_service_file

    chosen = service.update_mode(mode)
    service.running_for_update(service_name)
    inputs = options.task_inputs(env, env_file, secret, overrides)
    result = plan_service_file(task_file, name=service_name, inputs=inputs)
    print_warnings(result.warnings)
    service.check_can_serve(result)
    envs, secrets = envs_and_secrets(env, env_file, secret)
    recorded = overrides.recorded(task_file.resolve().parent) if overrides else {}
    number, why_new = service.reuse_check(service_name, task_file, envs, recorded)
    preview = service.preview(service_name, number, chosen, result.replica_policy, why_new)
    sys.stdout.write(service_plan_text(result.plan) + "\n" + update_text(preview))
    confirm_on_terminal(f"Update service {service_name} to version {number}?", yes=yes)
    note = service.update(
        service_name, number, task_file, envs, secrets, recorded, chosen, preview.scale_target
    )
    print_warnings([note] if note else [])
    typer.echo(
        f"Service {service_name}: updating to version {number} ({chosen}). "
        f"Watch it: skyform serve status {service_name}"
    )
    return 0


@serve_app.command("plans")
def plans(
    service_name: str = typer.Argument(..., help="The service."),
    json_out: bool = options.JSON,
) -> int:
    """The service's plan revisions: one per autoscaling decision, replacement, update."""
    from skyform.cli.render.output import print_json
    from skyform.cli.render.serve import revisions_text
    from skyform.ops.serve import records

    found = records.plans(service_name)
    if json_out:
        print_json([r.model_dump(mode="json") for r in found])
    else:
        sys.stdout.write(revisions_text(found))
    return 0


@serve_app.command("status")
def status(
    service_names: list[str] = typer.Argument(None, help="Services (default: all)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Policies; every replica."),
    endpoint: bool = typer.Option(False, "--endpoint", help="Print only the endpoint URL."),
    json_out: bool = options.JSON,
) -> int:
    """Services and their replicas, as `sky serve status` shows them."""
    from skyform.cli.render.output import print_json
    from skyform.cli.render.serve import render_status
    from skyform.errors import SkyformError
    from skyform.ops.serve import service

    records = service.statuses(list(service_names or []))
    if endpoint:
        if len(records) != 1:
            raise SkyformError("--endpoint needs exactly one service", "Name one service.")
        from skyform.cli.render.visible import visible

        typer.echo(visible(records[0].endpoint or "-"))
        return 0
    if json_out:
        print_json([r.model_dump(mode="json") for r in records])
        return 0
    render_status(records, verbose=verbose)
    return 0


@serve_app.command("down")
def down(
    service_names: list[str] = typer.Argument(None, help="Services to tear down."),
    all_services: bool = typer.Option(False, "--all", "-a", help="Every service."),
    purge: bool = typer.Option(
        False, "--purge", "-p", help="Also forget a service whose controller died."
    ),
    replica_id: int | None = typer.Option(
        None, "--replica-id", help="Tear down only this replica (replaced if needed)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> int:
    """Tear services down: replicas, load balancer, controller, records; or, with
    --replica-id, one replica (drained, then replaced if the service is below its target;
    a failed replica's record goes only with --purge)."""
    from skyform.cli.prompts import confirm_on_terminal
    from skyform.cli.render.console import make_console
    from skyform.errors import SkyformError
    from skyform.ops.serve import service

    if replica_id is not None:
        names = list(service_names or [])
        if all_services or len(names) != 1:
            raise SkyformError("--replica-id needs exactly one service name",
                               "skyform serve down NAME --replica-id N")  # fmt: skip
        service.to_tear_down(names, every=False)
        confirm_on_terminal(f"Tear down replica {replica_id} of service {names[0]}?", yes=yes)
        service.down_replica(names[0], replica_id, purge=purge)
        make_console().print(
            f"Replica {replica_id} of service {names[0]} is shutting down; the controller "
            f"replaces it if the service is below its target. Watch it: skyform serve status "
            f"{names[0]}"
        )
        return 0
    names = service.to_tear_down(list(service_names or []), every=all_services)
    if not names:
        make_console().print("No services to tear down.")
        return 0
    confirm_on_terminal(f"Tear down service(s) {', '.join(names)}?", yes=yes)
    console = make_console()
    for name in names:
        service.down(name, purge=purge, emit=console.print)
        console.print(f"Service {name} is down.")
    return 0


@serve_app.command("logs")
def logs(
    service_name: str = typer.Argument(..., help="The service."),
    replica_id: int | None = typer.Argument(None, help="A replica's id."),
    controller: bool = typer.Option(False, "--controller", help="The controller's log."),
    load_balancer: bool = typer.Option(False, "--load-balancer", help="The load balancer's log."),
    follow: bool = typer.Option(
        True,
        "--follow/--no-follow",
        "-f",
        help="Keep streaming (the default, as in SkyPilot): a controller or load-balancer "
        "log until Ctrl-C, a replica's until its job ends; --no-follow prints what there is "
        "and exits.",
    ),
    tail: int | None = typer.Option(None, "--tail", min=0, help="Only the last N lines."),
) -> int:
    """One log of a service: its controller, its load balancer, or one replica's job.
    Follows by default, as `sky serve logs` does: the controller or load-balancer log until
    Ctrl-C (which stops following, not the service), a replica's until its job ends."""
    from skyform.errors import SkyformError
    from skyform.ops.serve import records

    records.require(service_name)
    if sum([controller, load_balancer, replica_id is not None]) != 1:
        raise SkyformError("choose one: --controller, --load-balancer or a replica id")
    if replica_id is not None:
        return _replica_logs(service_name, replica_id, follow=follow, tail=tail)
    which = "controller" if controller else "load_balancer"
    for chunk in records.log_chunks(service_name, which, follow=follow, tail=tail):
        sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
    return 0


def _replica_logs(name: str, replica_id: int, *, follow: bool, tail: int | None) -> int:
    """A replica's job log from its nodes; for a failed replica whose cluster is torn down,
    the copy its controller kept before the teardown (said so first, on stderr)."""
    from skyform.cli.commands.logs import logs as cluster_logs
    from skyform.errors import SkyformError
    from skyform.ops.serve import records

    replica = records.replica_of(name, replica_id)
    kept = records.kept_log(name, replica, tail=tail or None)
    if kept is not None:
        typer.echo(
            f"Replica {replica_id} of {name} is {replica.status}: its cluster {replica.cluster} "
            "is torn down; this is its log as kept before the teardown.",
            err=True,
        )
        sys.stdout.buffer.write(kept)
        sys.stdout.flush()
        return 0
    if not records.cluster_exists(replica.cluster):
        raise SkyformError(
            f"replica {replica_id} of {name} ({replica.status}) has no cluster any more "
            f"({replica.cluster} was torn down) and no kept log",
            f"Its reason: {replica.reason or '-'}. See: skyform serve logs {name} --controller",
        )
    cluster_logs(replica.cluster, None, follow=follow, tail=tail, node=None, status=False)
    return 0  # a replica still serving is the normal case, not "job not finished" (101)
