"""A job's output as server-sent events: the CLI's own follower (which blocks) runs in a
thread and hands each line to the response; an `end` event carries the final status."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable

from aiohttp import web

from skyform.errors import SkyformError


class ClientGone(Exception):
    """The page was closed: the follower stops at its next line."""


Follow = Callable[[Callable[[str], None]], str]  # given a line sink, returns the status


async def events(request: web.Request, follow: Follow, label: str) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    gone = threading.Event()

    def line(text: str) -> None:
        if gone.is_set():
            raise ClientGone
        loop.call_soon_threadsafe(queue.put_nowait, ("line", text))

    def run() -> None:
        try:
            status = follow(line)
            loop.call_soon_threadsafe(queue.put_nowait, ("end", status))
        except ClientGone:
            pass
        except SkyformError as exc:
            loop.call_soon_threadsafe(queue.put_nowait, ("end", f"error: {exc}"))

    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    threading.Thread(target=run, daemon=True, name=label).start()
    try:
        while True:
            kind, text = await queue.get()
            payload = json.dumps(text)  # one line of data, whatever the text holds
            await response.write(f"event: {kind}\ndata: {payload}\n\n".encode())
            if kind == "end":
                break
    except (ConnectionResetError, asyncio.CancelledError):
        gone.set()
        raise
    return response
