"""A small Kubernetes API server on loopback that serves recorded `/api/v1/nodes` answers.

Each cluster is served under its own path prefix (`http://127.0.0.1:PORT/<cluster>`), as an
API server behind a proxy is, so one server holds several clusters. It checks the bearer token
of each cluster (401 otherwise), pages its node list by `limit`/`continue` as a real API server
does, and records every request so tests can tell a cached plan from a fresh read.
Recorded answers live in tests/fixtures/k8s/ (GKE, EKS, and a plain cluster with the NVIDIA
GPU operator's `nvidia.com/gpu.product` labels).
"""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import yaml

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "k8s"
RECORDED = {"gke": "gke_nodes.json", "eks": "eks_nodes.json", "gfd": "gfd_nodes.json"}


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / RECORDED[name]).read_text())


class KubeApi:
    def __init__(self) -> None:
        self.clusters: dict[str, dict] = {}  # prefix -> NodeList
        self.tokens: dict[str, str] = {}
        self.requests: list[str] = []  # "prefix path?query" of every request
        self.page_size = 3  # the server's own page size (it ignores a larger `limit`)
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                api._answer(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def serve(self, prefix: str, node_list: dict, token: str | None = None) -> None:
        self.clusters[prefix] = copy.deepcopy(node_list)
        self.tokens[prefix] = token or f"token-{prefix}"

    def url(self, prefix: str) -> str:
        return f"http://127.0.0.1:{self.port}/{prefix}"

    def node_requests(self, prefix: str) -> int:
        """How many times a client started reading the node list of `prefix`."""
        return sum(1 for r in self.requests if r.startswith(f"{prefix} ") and "continue=" not in r)

    def kubeconfig(
        self,
        path: Path,
        contexts: dict[str, str],
        current: str | None = None,
        tokens: dict[str, str] | None = None,
        servers: dict[str, str] | None = None,
    ) -> Path:
        """Write a kubeconfig whose contexts (name -> cluster prefix) point at this server."""
        tokens, servers = tokens or {}, servers or {}
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": f"{name}-cluster", "cluster": {"server": servers.get(name) or self.url(p)}}
                for name, p in contexts.items()
            ],
            "users": [
                {"name": f"{name}-user", "user": {"token": tokens.get(name) or self.tokens.get(p)}}
                for name, p in contexts.items()
            ],
            "contexts": [
                {"name": name, "context": {"cluster": f"{name}-cluster", "user": f"{name}-user"}}
                for name in contexts
            ],
        }
        if current:
            doc["current-context"] = current
        path.write_text(yaml.safe_dump(doc))
        return path

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlparse(handler.path)
        prefix, _, rest = url.path.lstrip("/").partition("/")
        self.requests.append(f"{prefix} /{rest}?{url.query}")
        if prefix not in self.clusters or rest != "api/v1/nodes":
            return self._send(handler, 404, _status(404, "NotFound", f"/{rest} not found"))
        if handler.headers.get("Authorization") != f"Bearer {self.tokens[prefix]}":
            return self._send(handler, 401, _status(401, "Unauthorized", "Unauthorized"))
        query = parse_qs(url.query)
        items = self.clusters[prefix]["items"]
        start = int(query.get("continue", ["0"])[0])
        size = min(int(query.get("limit", [len(items) or 1])[0]), self.page_size)
        page = copy.deepcopy(self.clusters[prefix])
        page["items"] = items[start : start + size]
        if start + size < len(items):
            page["metadata"]["continue"] = str(start + size)
        self._send(handler, 200, page)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def _status(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
