"""A pooled connection whose replica hung up between the pool handing it out and the request
being written: libuv has closed the handle but the protocol's connection_lost has not run
yet, so the write raises. Seen when a replica's pod was deleted under load (the engine's
Kubernetes serve test): the client got a 500 instead of the retry on another replica."""

from __future__ import annotations

import asyncio

from skyform.serve.lb.upstream import ReplicaGone, UpstreamConnection, UpstreamPool


class _ClosedHandle:
    """libuv's TCP transport in that window: not yet closing to asyncio's eyes, and a write
    raises as uvloop's does (`_ensure_alive`)."""

    def __init__(self, closing: bool) -> None:
        self.closing = closing

    def write(self, data: bytes) -> None:
        raise RuntimeError("unable to perform operation on <TCPTransport closed=True>")

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def resume_reading(self) -> None:
        pass


def test_a_write_to_a_handle_closed_underneath_is_a_replica_gone():
    async def scenario() -> None:
        pool = UpstreamPool(asyncio.get_running_loop(), connect_timeout=1)
        connection = UpstreamConnection(pool, "http://127.0.0.1:9")
        connection.connection_made(_ClosedHandle(closing=False))  # type: ignore[arg-type]
        ended: list[tuple[int | None, BaseException | None]] = []
        request = b"GET / HTTP/1.1\r\n\r\n"
        connection.start(request, object(), False, 5, lambda *end: ended.append(end))  # type: ignore[arg-type]
        [(status, exc)] = ended
        assert status is None and isinstance(exc, ReplicaGone)
        assert "before the request was sent" in str(exc)
        assert connection.closed

    asyncio.run(scenario())


def test_the_pool_does_not_hand_out_a_connection_whose_transport_is_closing():
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        pool = UpstreamPool(loop, connect_timeout=1)
        stale = UpstreamConnection(pool, url)
        stale.connection_made(_ClosedHandle(closing=True))  # type: ignore[arg-type]
        pool.release(stale)
        fresh = pool.take_idle(url) or await pool.connect(url)
        assert fresh is not stale
        fresh._close()
        server.close()
        await server.wait_closed()

    asyncio.run(scenario())
