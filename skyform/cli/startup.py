"""Set-up every command needs before its first pydantic model: the Typer app
(cli/main.py) and the fast paths (cli/fastpath.py) both call it."""

from __future__ import annotations

import os
import sys
import types


def skip_pydantic_plugins() -> None:
    """skyform uses no pydantic plugins; looking them up scans every installed package's
    entry points the first time a model is built (tens of ms on every command). With every
    plugin disabled, pydantic's plugin loader returns () without looking, yet importing it
    imports importlib.metadata (~10 ms, a tenth of a cold `plan`): stand in for it with the
    answer it would give; if pydantic is already loaded, change nothing."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] != "__all__" or "pydantic" in sys.modules:
        return
    loader = types.ModuleType("pydantic.plugin._loader", "skyform: plugins are disabled")
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules.setdefault(loader.__name__, loader)
