"""The use case behind `skyform controller run`: the controller service that adopts managed
jobs and services. The adoption loop and the lease are skyform/controllers/; what each kind
offers for adoption lives with its subsystem (ops/managed/adoptable.py, serve/adoptable.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run(*, poll: float, emit: Callable[[str], None], stop: threading.Event) -> None:
    from skyform.controllers.loop import serve
    from skyform.ops.managed.adoptable import ManagedJobsKind
    from skyform.serve.adoptable import ServicesKind

    serve([ManagedJobsKind(), ServicesKind()], poll=poll, emit=emit, stop=stop)
