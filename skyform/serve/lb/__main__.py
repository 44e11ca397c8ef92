"""`python -m skyform.serve.lb CONFIG.json`: the load balancer process."""

from __future__ import annotations

import asyncio
import logging
import sys

from skyform.errors import SkyformError
from skyform.serve.lb.config import load_config
from skyform.serve.lb.server import serve_forever


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
    asyncio.run(serve_forever(config))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
