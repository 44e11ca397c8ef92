"""`skyform exec CLUSTER TASK.yaml|CMD [ARGS...]`: sync and run on an existing cluster (no
setup). `exec C python train.py --lr 1` and `exec C -- python train.py -d` need no quotes."""

from __future__ import annotations

from pathlib import Path

import typer

from skyform.cli import options
from skyform.cli.leading_options import CommandAfterOptions


def register(app: typer.Typer) -> None:
    # Unknown options after the command (`--lr 1`) belong to it; `--` ends skyform's own.
    # Before the command, an unknown option is refused (cli/leading_options.py).
    app.command("exec", cls=CommandAfterOptions, context_settings={"ignore_unknown_options": True})(
        exec_
    )


@options.resource_flags
def exec_(
    cluster: str = typer.Argument(..., help="An existing cluster (see skyform status)."),
    target: list[str] = typer.Argument(
        ...,
        metavar="TASK.yaml|CMD [ARGS]...",
        help="A task YAML (its run + workdir), or a command.",
    ),
    detach: bool = typer.Option(
        False, "--detach-run", "--detach", "-d", help="Return once submitted."
    ),
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    overrides=None,
) -> int:
    """Run a task's `run` (after syncing its workdir) or a shell command on every node.

    Exits with the command's exit code (the first non-zero one across nodes). Resource flags
    are the job's demand: --gpus, --infra, --use-spot, -t and --image-id must match the cluster.
    """
    from skyform.cli.render.messages import print_warnings
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.ops.clusters import shown_names
    from skyform.ops.exec import exec_on_cluster, exit_code_of, ignored_flags

    print_warnings(ignored_flags(overrides))
    progress = ConsoleProgress(quiet_nodes=True, names=shown_names())
    job = exec_on_cluster(
        cluster,
        target,
        detach=detach,
        inputs=options.task_inputs(env, env_file, secret, overrides),
        on_log=lambda line: progress.log(cluster, line),
        on_event=lambda stage, rank, msg: progress.event(cluster, stage, rank, msg),
    )
    if detach:
        progress.console.print(
            f"{progress.shown(cluster)}: job {job.job_id} submitted; follow it: "
            f"skyform logs {progress.shown(cluster)} {job.job_id} --follow"
        )
        return 0
    progress.job_end(job)
    return exit_code_of(job)
