"""The jinja2 templates shipped in skyform/templates (node runner, env file)."""

from __future__ import annotations

import shlex
import threading
from functools import cache
from importlib import resources

from skyform.digests import sha256_hex

# Nodes are prepared from a thread per node: without this lock each thread would build its
# own environment and compile the same template (~30 ms of CPU each) on a cold cache.
_LOCK = threading.Lock()


@cache
def _environment():
    import jinja2  # only when a node is prepared: `skyform status` should not pay for it

    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_source),
        autoescape=False,  # shell, not HTML: quoting is explicit through `shquote`
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["shquote"] = shlex.quote
    return env


def _source(name: str) -> str:
    return resources.files("skyform").joinpath("templates").joinpath(name).read_text()


def render(name: str, **values: object) -> str:
    with _LOCK:
        template = _environment().get_template(name)
    return template.render(**values)


def digest(text: str) -> str:
    return sha256_hex(text)
