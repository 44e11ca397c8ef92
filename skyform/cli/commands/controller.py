"""`skyform controller run`: the long-running controller service of managed jobs and services
(team mode)."""

from __future__ import annotations

import typer

from skyform.cli.groups import verb_group

controller_app, register = verb_group(
    "controller",
    "The controller service of managed jobs and services: run it on a VM, a CI runner or a "
    "pool host.",
)


@controller_app.command("run")
def run(
    poll: float = typer.Option(2.0, "--poll", min=0.1, help="Seconds between looks for work."),
) -> None:
    """Adopt and drive managed jobs and services from the state store until stopped (Ctrl-C,
    SIGTERM). Registers itself with a lease; a job or service whose controller died is
    adopted by a service within the lease time (SKYFORM_LEASE_TTL). A service's load balancer
    keeps serving meanwhile. See examples/skyform-controller.service."""
    import signal
    import threading

    from skyform.ops.controller_service import run as serve

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        serve(poll=poll, emit=lambda line: typer.echo(line), stop=stop)
    except KeyboardInterrupt:
        stop.set()
