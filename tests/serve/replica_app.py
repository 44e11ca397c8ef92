"""A small real HTTP server used as a service replica in tests and benchmarks.

`python tests/serve/replica_app.py PORT [HOST]` or `replica_app(...)` in-process. Routes:
  /health        200, or 503 after POST /-/fail (POST /-/heal undoes it)
  /echo          JSON of method, path, query, headers, body, replica id
  /stream?n=&gap=  server-sent events, one every `gap` seconds (an LLM token stream)
  /sleep?s=      answers after s seconds
  /status/N      answers with status N
  /big?kb=       a chunked body of kb KiB
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from aiohttp import web


def replica_app(replica_id: str = "0") -> web.Application:
    state = {"healthy": True}
    app = web.Application(client_max_size=64 * 1024 * 1024)

    async def health(_r: web.Request) -> web.Response:
        return web.Response(
            text="ok" if state["healthy"] else "down", status=200 if state["healthy"] else 503
        )

    async def fail(_r: web.Request) -> web.Response:
        state["healthy"] = False
        return web.Response(text="failing")

    async def heal(_r: web.Request) -> web.Response:
        state["healthy"] = True
        return web.Response(text="healed")

    async def echo(r: web.Request) -> web.Response:
        body = await r.read()
        return web.json_response(
            {
                "replica": replica_id,
                "method": r.method,
                "path": r.path,
                "raw_path": r.raw_path,
                "headers": [[k, v] for k, v in r.headers.items()],
                "body": base64.b64encode(body).decode(),
            },
            headers={
                "X-Replica": replica_id,
                "X-App-Version": os.environ.get("APP_VERSION", "1"),
                "Set-Cookie": "a=1",
            },
        )

    async def stream(r: web.Request) -> web.StreamResponse:
        n, gap = int(r.query.get("n", "5")), float(r.query.get("gap", "0.05"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(r)
        for i in range(n):
            await response.write(f"data: token-{i}\n\n".encode())
            await asyncio.sleep(gap)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def sleep(r: web.Request) -> web.Response:
        await asyncio.sleep(float(r.query.get("s", "1")))
        return web.Response(text=f"slept {replica_id}")

    async def status(r: web.Request) -> web.Response:
        return web.Response(status=int(r.match_info["code"]), text="as asked")

    async def big(r: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(r)
        chunk = b"x" * 1024
        for _ in range(int(r.query.get("kb", "1024"))):
            await response.write(chunk)
        await response.write_eof()
        return response

    app.router.add_get("/health", health)
    app.router.add_post("/-/fail", fail)
    app.router.add_post("/-/heal", heal)
    app.router.add_route("*", "/echo", echo)
    app.router.add_get("/stream", stream)
    app.router.add_get("/sleep", sleep)
    app.router.add_get("/status/{code}", status)
    app.router.add_get("/big", big)

    async def hello(_r: web.Request) -> web.Response:
        return web.Response(text=f"hello from replica {replica_id}\n")

    app.router.add_get("/", hello)
    return app


if __name__ == "__main__":
    port = int(sys.argv[1])
    host = sys.argv[2] if len(sys.argv) > 2 else "0.0.0.0"
    rid = os.environ.get("SKYPILOT_SERVE_REPLICA_ID", "0")
    web.run_app(replica_app(rid), host=host, port=port, access_log=None, print=None)
