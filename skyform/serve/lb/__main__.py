"""`python -m skyform.serve.lb CONFIG.json`: the load balancer process, and the worker
processes it forks to serve its port on every core (`workers` in the config)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

import uvloop

from skyform.errors import SkyformError
from skyform.serve.lb.config import load_config
from skyform.serve.lb.server import serve_forever
from skyform.serve.lb.workers import fork_workers, listening_socket


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if len(argv) != 1:
        logging.error("usage: python -m skyform.serve.lb CONFIG.json")
        return 2
    try:
        config = load_config(argv[0])
    except SkyformError as exc:
        logging.error("%s", exc.message)
        return 1
    uvloop.install()  # before the fork: every worker's loop is libuv's
    count = config.workers or len(os.sched_getaffinity(0))
    if count == 1:
        asyncio.run(serve_forever(config))
        return 0
    listener = listening_socket(config.host, config.port)
    workers = fork_workers(config, count - 1, listener)
    asyncio.run(serve_forever(config, listener, workers))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
