"""SkyPilot verbs skyform does not have (yet): one line saying so, exit 1 — never a "did you
mean" that points a SkyPilot user at a different verb. Registered last, and only for names
no other command module took: the verb's own module replaces its line here when it lands."""

from __future__ import annotations

import typer

# verb -> what it does in SkyPilot
SKYPILOT_ONLY: dict[str, str] = {
    "volumes": "persistent volumes",
    "volume": "persistent volumes",
    "api": "the API server",
    "local": "a local Kubernetes cluster",
    "workspace": "workspaces",
}


def register(app: typer.Typer) -> None:
    taken = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    for verb, what in SKYPILOT_ONLY.items():
        if verb not in taken:
            app.command(
                verb,
                hidden=True,
                add_help_option=False,
                context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
            )(_not_yet(verb, what))


def _not_yet(verb: str, what: str):
    def command(ctx: typer.Context) -> None:
        from skyform.errors import SkyformError

        del ctx  # whatever followed the verb is not looked at
        raise SkyformError(f"skyform has no `{verb}` yet (in SkyPilot: {what}); see skyform --help")

    command.__doc__ = f"Not in skyform yet: SkyPilot's `sky {verb}` ({what})."
    return command
