"""Following a log file that another process appends to (a managed job's controller, a
service's controller or load balancer)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import BinaryIO

POLL_SECONDS = 0.2


def appended(log: BinaryIO, *, over: Callable[[], bool]) -> Iterator[bytes]:
    """What is appended to the open `log` from where it stands, until `over()` holds and
    nothing more is there. `over` is asked before each read, so what the writer wrote before
    it was over is still read."""
    while True:
        ended = over()
        chunk = log.read()
        if chunk:
            yield chunk
        elif ended:
            return
        else:
            time.sleep(POLL_SECONDS)
