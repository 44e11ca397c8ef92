"""A replica made of the standard library only, for hosts without the test venv (sshd nodes
are other Unix users): `python3 plain_replica.py PORT HOST`. GET /health is 200; any other
path answers with its replica id in `X-Replica` (SKYPILOT_SERVE_REPLICA_ID)."""

from __future__ import annotations

import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLICA = os.environ.get("SKYPILOT_SERVE_REPLICA_ID", "0")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = b"ok" if self.path == "/health" else f"replica {REPLICA}\n".encode()
        self.send_response(200)
        self.send_header("X-Replica", REPLICA)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer((sys.argv[2], int(sys.argv[1])), Handler).serve_forever()
