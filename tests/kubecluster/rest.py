"""A small JSON client of the test API server for the node agent: raw objects (camelCase
dicts, as the API serves them), one keep-alive connection per thread."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from typing import Any


class ApiError(RuntimeError):
    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status


class Rest:
    def __init__(self, port: int, token: str, ca_file: str) -> None:
        self.port, self.token = port, token
        self.context = ssl.create_default_context(cafile=ca_file)
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(
                "127.0.0.1", self.port, context=self.context, timeout=30
            )
            self._local.conn = conn
        return conn

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):  # a keep-alive connection the server closed: reconnect once
            conn = self._connection()
            try:
                conn.request(method, path, body=data, headers=headers)
                answer = conn.getresponse()
                text = answer.read().decode()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        if answer.status >= 300:
            raise ApiError(answer.status, method, path, text)
        return json.loads(text) if text else None

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self.call("POST", path, body)

    def put(self, path: str, body: Any) -> Any:
        return self.call("PUT", path, body)

    def merge_patch(self, path: str, body: Any) -> Any:
        return self.call("PATCH", path, body, "application/merge-patch+json")

    def delete(self, path: str, body: Any = None) -> Any:
        return self.call("DELETE", path, body)
