"""The use case behind `skyform controller run`: the controller service that adopts managed
jobs and services (skyform/controllers/)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run(*, poll: float, emit: Callable[[str], None], stop: threading.Event) -> None:
    from skyform.controllers import every_kind
    from skyform.controllers.loop import serve

    serve(every_kind(), poll=poll, emit=emit, stop=stop)
