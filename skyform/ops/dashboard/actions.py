"""What the dashboard may change with --allow-actions: cancel a job, cancel a managed job,
take a cluster down, set a cluster's autostop. Each is the CLI's use case, called as the CLI
calls it; the server asks for a confirmation page first and checks the request's origin."""

from __future__ import annotations

from dataclasses import dataclass

from skyform.errors import SkyformError


@dataclass(frozen=True)
class PageAction:
    kind: str
    question: str  # what the confirmation page asks
    params: dict[str, str]


def describe(kind: str, params: dict[str, str]) -> PageAction:
    cluster, job = params.get("cluster", ""), params.get("job", "")
    if kind == "cancel":
        return PageAction(
            kind, f"Cancel job {job} on cluster {cluster}?", {"cluster": cluster, "job": job}
        )
    if kind == "cancel-managed":
        return PageAction(kind, f"Cancel managed job {job}?", {"job": job})
    if kind == "down":
        return PageAction(
            kind, f"Tear down cluster {cluster}? Its nodes are terminated.", {"cluster": cluster}
        )
    if kind == "autostop":
        minutes, idle = params.get("minutes", ""), params.get("idle", "stop")
        if idle not in ("stop", "down"):
            raise SkyformError(f"idle must be stop or down, not {idle!r}")
        what = (
            "cancel autostop"
            if minutes in ("", "cancel")
            else f"{'tear it down' if idle == 'down' else 'stop it'} after {minutes} idle minutes"
        )
        return PageAction(
            kind,
            f"Set autostop of {cluster}: {what}?",
            {"cluster": cluster, "minutes": minutes, "idle": idle},
        )
    raise SkyformError(
        f"no action {kind!r}", "The actions are cancel, cancel-managed, down, autostop."
    )


def _number(text: str, what: str) -> int:
    if not text.isdigit():
        raise SkyformError(f"{what} must be a whole number, not {text!r}")
    return int(text)


def perform(action: PageAction) -> str:
    """Do it; the sentence the result page shows."""
    p = action.params
    if action.kind == "cancel":
        from skyform.ops.cluster_jobs import cancel_on

        done = cancel_on(p["cluster"], [_number(p["job"], "job")])
        return f"cancelled {len(done)} job(s) on {p['cluster']}"
    if action.kind == "cancel-managed":
        from skyform.ops.managed.verbs import cancel

        managed = cancel([_number(p["job"], "job")])
        return f"cancelled {len(managed)} managed job(s)"
    if action.kind == "down":
        from skyform.ops.clusters import DownReport, down_clusters

        def ignore(*_: object) -> None:
            pass

        report = DownReport(kept=ignore, confirm=ignore, stage=ignore, event=ignore)
        chosen = down_clusters([p["cluster"]], every=False, purge=False, report=report)
        return f"took down {', '.join(chosen) or 'nothing'}"
    from skyform.ops.autostop import autostop_clusters

    cancel_it = p["minutes"] in ("", "cancel")
    minutes = None if cancel_it else _number(p["minutes"], "minutes")
    down = p["idle"] == "down" and not cancel_it
    for name, setting in autostop_clusters(
        [p["cluster"]], idle_minutes=minutes, down=down, wait_for=None, cancel=cancel_it
    ):
        return f"autostop of {name}: {'cancelled' if setting is None else setting.short}"
    return "nothing changed"
