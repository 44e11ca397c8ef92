"""The dashboard's aiohttp application: the guard in front of every route, the jinja2
environment (autoescape on for every template), static files, and `serve` for the verb."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlencode

from aiohttp import web

from skyform.errors import SkyformError
from skyform.ops.dashboard.guard import COOKIE, TOKENLESS, Guard, bearer
from skyform.ops.dashboard.rendering import GUARD, JINJA, environment, render

HERE = Path(__file__).parent
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# No inline script or style, nothing from elsewhere: text that slipped through escaping
# still could not run.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def _refusal(status: int, title: str, detail: str) -> web.Response:
    # plain text on purpose: a refusal renders nothing that came with the request
    import html

    body = (
        "<!doctype html><html><head><meta charset=utf-8><title>skyform dashboard</title></head>"
        f"<body><h1>{status} {html.escape(title)}</h1><p>{html.escape(detail)}</p></body></html>"
    )
    return web.Response(text=body, status=status, content_type="text/html")


@web.middleware
async def guard_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    guard = request.app[GUARD]
    if not guard.host_allowed(request.headers.get("Host")):
        return _refusal(421, "Misdirected Request", "This dashboard answers to localhost only.")
    offered = (
        bearer(request.headers.get("Authorization"))
        or request.query.get("token")
        or request.cookies.get(COOKIE)
    )
    if not guard.token_ok(offered):
        return _refusal(
            401,
            "Unauthorized",
            "Open the link with ?token=... that `skyform dashboard` printed "
            "(or set SKYFORM_DASHBOARD_TOKEN).",
        )
    if guard.token is not None and "token" in request.query and request.method == "GET":
        query = {k: v for k, v in request.query.items() if k != "token"}
        target = request.path + (f"?{urlencode(query)}" if query else "")
        response: web.StreamResponse = web.HTTPSeeOther(target)
        response.set_cookie(COOKIE, guard.token, httponly=True, samesite="Strict")
        return response
    if request.method not in ("GET", "HEAD"):
        if not guard.allow_actions:
            return _refusal(
                403, "Forbidden", "Read-only: start the dashboard with --allow-actions."
            )
        if not guard.same_origin(request.headers.get("Origin"), request.headers.get("Host")):
            return _refusal(403, "Forbidden", "Cross-site request refused.")
    try:
        response = await handler(request)
    except web.HTTPException:
        raise
    except SkyformError as exc:
        response = render(request, "error.html", status=400, message=str(exc), hint=exc.hint or "")
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    # not no-referrer: under it Chrome sends `Origin: null` with a form POST, even our own
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["Cache-Control"] = "no-store"
    return response


def make_app(guard: Guard) -> web.Application:
    from skyform.ops.dashboard import pages

    app = web.Application(middlewares=[guard_middleware])
    app[GUARD] = guard
    app[JINJA] = environment()
    pages.add_routes(app)
    app.router.add_static("/static/", HERE / "static", follow_symlinks=False)
    return app


def choose_token(host: str, given: str | None) -> str | None:
    """No token on the default loopback address (127.0.0.1, ::1, localhost); on any other,
    SKYFORM_DASHBOARD_TOKEN or a fresh one."""
    if host.strip("[]").lower() in TOKENLESS:
        return None
    return given or secrets.token_urlsafe(24)


async def _serve(app: web.Application, host: str, port: int, ready: Callable[[int], None]) -> None:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise SkyformError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            "Pick another --port (or stop what listens there).",
        ) from None
    server = site._server
    sockets = getattr(server, "sockets", None) or []
    ready(sockets[0].getsockname()[1] if sockets else port)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def start(
    host: str,
    port: int,
    *,
    allow_actions: bool,
    token: str | None,
    ready: Callable[[str], None],
) -> None:
    """`skyform dashboard`: serve until interrupted; `ready(url)` once it listens (with the
    token in the URL when one is needed)."""
    guard = Guard(host, choose_token(host, token), allow_actions=allow_actions)

    def listening(bound: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        suffix = f"/?token={guard.token}" if guard.token else "/"
        ready(f"http://{shown}:{bound}{suffix}")

    serve(guard, port, listening)


def serve(guard: Guard, port: int, ready: Callable[[int], None]) -> None:
    """Serve until interrupted; `ready(port)` once it listens (port 0: the one bound)."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(make_app(guard), guard.listen_host, port, ready))
