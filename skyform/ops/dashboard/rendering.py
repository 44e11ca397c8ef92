"""The pages' rendering: the app's keys (its guard, its jinja2 environment) and `render`,
shared by the server and the routes."""

from __future__ import annotations

import time
from pathlib import Path

from aiohttp import web

from skyform.ops.dashboard.guard import Guard

HERE = Path(__file__).parent
GUARD = web.AppKey("guard", Guard)
JINJA = web.AppKey("jinja", object)


def environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every template, whatever its file name
        undefined=jinja2.StrictUndefined,
    )
    from skyform.ops.dashboard import formats

    env.filters.update(formats.FILTERS)
    return env


def render(request: web.Request, template: str, status: int = 200, **context) -> web.Response:
    guard = request.app[GUARD]
    env = request.app[JINJA]
    html = env.get_template(template).render(  # type: ignore[attr-defined]
        csrf=guard.csrf,
        allow_actions=guard.allow_actions,
        path=request.path,
        now=time.time(),
        **context,
    )
    return web.Response(text=html, status=status, content_type="text/html")
