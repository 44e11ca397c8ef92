"""Just enough HTTP/1.1 for a reverse proxy: request and response heads, message framing
(Content-Length, chunked, until close) and the headers that belong to one hop only.

Heads are parsed once into (name, value) byte pairs; bodies are relayed as bytes, never
decoded, except a chunked request body, which is read whole (to retry it on another
replica) and sent on with a Content-Length.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_HEAD_BYTES = 64 * 1024
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
    }
)
NO_BODY_STATUSES = frozenset({204, 304})
REASONS = {
    400: b"Bad Request",
    408: b"Request Timeout",
    413: b"Request Entity Too Large",
    431: b"Request Header Fields Too Large",
    500: b"Internal Server Error",
    501: b"Not Implemented",
    502: b"Bad Gateway",
    503: b"Service Unavailable",
    504: b"Gateway Timeout",
}


class BadMessage(Exception):
    """A head or body that is not HTTP/1.1 we can relay; `status` is the answer to send."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


Headers = list[tuple[bytes, bytes]]


@dataclass
class Head:
    """A request head (method, target) or a response head (status, reason)."""

    first: bytes  # the method, or the status code's digits
    second: bytes  # the target, or the reason phrase
    version: bytes
    headers: Headers
    length: int | None  # Content-Length, if any
    chunked: bool
    close: bool  # the sender will not (or asks us not to) reuse the connection

    @property
    def status(self) -> int:
        return int(self.first)


def parse_request_head(data: bytes) -> Head:
    lines = data.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith(b"HTTP/1."):
        raise BadMessage(400, "a request line must be METHOD TARGET HTTP/1.x")
    head = _head(parts[0], parts[1], parts[2], lines[1:], default_close=parts[2] == b"HTTP/1.0")
    return head


def parse_response_head(data: bytes) -> Head:
    lines = data.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise BadMessage(502, "the replica's status line is not HTTP/1.x")
    reason = parts[2] if len(parts) == 3 else b""
    return _head(parts[1], reason, parts[0], lines[1:], default_close=parts[0] == b"HTTP/1.0")


def _head(
    first: bytes, second: bytes, version: bytes, lines: list[bytes], *, default_close: bool
) -> Head:
    headers: Headers = []
    length: int | None = None
    chunked = False
    close = default_close
    for line in lines:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip() or name[:1] in b" \t":
            raise BadMessage(400, "a header line must be NAME: VALUE")
        value = value.strip()
        lowered = name.lower()
        if lowered == b"content-length":
            if not value.isdigit() or (length is not None and int(value) != length):
                raise BadMessage(400, "invalid Content-Length")
            length = int(value)
        elif lowered == b"transfer-encoding":
            codings = [c.strip().lower() for c in value.split(b",")]
            if codings[-1:] != [b"chunked"] or len(codings) != 1:
                raise BadMessage(501, "only chunked transfer coding is relayed")
            chunked = True
        elif lowered == b"connection":
            tokens = {t.strip().lower() for t in value.split(b",")}
            if b"close" in tokens:
                close = True
            elif b"keep-alive" in tokens:
                close = False
        headers.append((name, value))
    if chunked and length is not None:
        raise BadMessage(400, "both Content-Length and Transfer-Encoding")
    return Head(first, second, version, headers, length, chunked, close)


def end_to_end(headers: Headers) -> Headers:
    """`headers` less the hop-by-hop ones and those the Connection header names."""
    named = set(HOP_BY_HOP)
    for name, value in headers:
        if name.lower() == b"connection":
            named.update(t.strip().lower() for t in value.split(b","))
    return [(n, v) for n, v in headers if n.lower() not in named]


def serialize(first_line: bytes, headers: Headers) -> bytes:
    return b"".join([first_line, b"\r\n", *(n + b": " + v + b"\r\n" for n, v in headers), b"\r\n"])


def error_response(status: int, body: bytes, *, close: bool) -> bytes:
    head = [
        (b"Content-Type", b"application/json; charset=utf-8"),
        (b"Content-Length", str(len(body)).encode()),
    ]
    if close:
        head.append((b"Connection", b"close"))
    reason = REASONS.get(status, b"Error")
    return serialize(b"HTTP/1.1 %d %s" % (status, reason), head) + body


class ChunkedScanner:
    """Follows chunked framing over bytes relayed as they are: `feed` says where the
    message ends (the index just past the last CRLF of the trailer), or None if not yet.
    With `keep`, it also collects the chunks' data (a request body read whole)."""

    def __init__(self, keep: bool = False) -> None:
        self._state = 0  # 0: size line, 1: data, 2: CRLF after data, 3: trailer lines
        self._left = 0
        self._line = b""
        self.data: list[bytes] | None = [] if keep else None
        self.size = 0

    def feed(self, chunk: bytes) -> int | None:
        i, n = 0, len(chunk)
        while i < n:
            if self._state == 1:
                take = min(self._left, n - i)
                if self.data is not None:
                    self.data.append(chunk[i : i + take])
                self.size += take
                self._left -= take
                i += take
                if self._left == 0:
                    self._state = 2
                continue
            end = chunk.find(b"\n", i)
            if end < 0:
                self._line += chunk[i:]
                if len(self._line) > 4096:
                    raise BadMessage(400, "a chunk line longer than 4096 bytes")
                return None
            line = (self._line + chunk[i:end]).rstrip(b"\r")
            self._line = b""
            i = end + 1
            if self._state == 0:
                size_text = line.split(b";", 1)[0].strip()
                try:
                    self._left = int(size_text, 16)
                except ValueError:
                    raise BadMessage(400, "invalid chunk size") from None
                self._state = 1 if self._left else 3
            elif self._state == 2:
                if line:
                    raise BadMessage(400, "chunk data longer than its size")
                self._state = 0
            elif not line:  # state 3: the empty line that ends the trailer
                return i
        return None
