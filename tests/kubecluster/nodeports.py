"""Node ports without kube-proxy: a TCP forwarder per (pod network namespace, node port).

In the test cluster every pod is its own node (hostIP = podIP), so a Service's node port is
opened in each pod's network namespace, as kube-proxy opens it on every node, and forwards to
a ready endpoint of the Service (the pod's own first, as with externalTrafficPolicy Local).
The listening socket is made by a thread that entered the namespace (setns is per thread, and
a socket keeps the namespace it was made in); connections are relayed by plain threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import struct
import threading
from collections.abc import Callable

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def listen_in_netns(netns: str, port: int) -> socket.socket:
    """A listening TCP socket on 0.0.0.0:port inside the named network namespace."""
    made: list[socket.socket] = []
    failed: list[BaseException] = []

    def inside() -> None:
        try:
            fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {netns}")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("0.0.0.0", port))
            sock.listen(128)
            made.append(sock)
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=inside, name=f"netns-{netns}")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return made[0]


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


class Forwarder:
    """Accepts on `listener`; each connection goes to the address `target()` names then."""

    def __init__(self, listener: socket.socket, target: Callable[[], tuple[str, int] | None]):
        self.listener, self.target = listener, target
        self._closed = False
        self._lock = threading.Lock()
        self._relays: dict[socket.socket, threading.Thread] = {}  # client -> its relay
        self._thread = threading.Thread(target=self._serve, daemon=True, name="nodeport")
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            relay = threading.Thread(target=self._relay, args=(client,), daemon=True)
            with self._lock:  # started before end_relays can see it (it joins what it sees)
                self._relays[client] = relay
                relay.start()

    def _relay(self, client: socket.socket) -> None:
        try:
            self._relay_to_target(client)
        finally:
            with self._lock:
                self._relays.pop(client, None)

    def _relay_to_target(self, client: socket.socket) -> None:
        address = self.target()
        if address is None:  # no ready endpoint: refused, as kube-proxy's REJECT rule does
            client.close()
            return
        try:
            upstream = socket.create_connection(address, timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        for sock in (client, upstream):  # both ways ended: a reset leaves no orphan socket
            with contextlib.suppress(OSError):  # to hold the pod's namespace after it ends
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()

    def end_relays(self) -> None:
        """End the connections being relayed: their peers get a FIN, as a node's kernel
        ends them when the pod behind them is gone."""
        with self._lock:
            relays = dict(self._relays)
        for client in relays:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)  # wakes its relay, which closes both ends
        for relay in relays.values():
            relay.join(timeout=2)
