"""`skyform controller run`: the long-running managed-job controller service (team mode)."""

from __future__ import annotations

import typer

from skyform.cli.groups import verb_group

controller_app, register = verb_group(
    "controller",
    "The managed-job controller service: run it on a VM, a CI runner or a pool host.",
)


@controller_app.command("run")
def run(
    poll: float = typer.Option(2.0, "--poll", min=0.1, help="Seconds between looks for work."),
) -> None:
    """Adopt and drive managed jobs from the state store until stopped (Ctrl-C, SIGTERM).
    Registers itself with a lease; a job whose controller died is adopted by a service within
    the lease time (SKYFORM_LEASE_TTL). See examples/skyform-controller.service."""
    import signal
    import threading

    from skyform.ops.managed.service import serve

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        serve(poll=poll, emit=lambda line: typer.echo(line), stop=stop)
    except KeyboardInterrupt:
        stop.set()
