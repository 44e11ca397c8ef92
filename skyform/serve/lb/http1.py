"""Just enough HTTP/1.1 for a reverse proxy: request and response heads, message framing
(Content-Length, chunked, until close) and the headers that belong to one hop only.

A head's lines are checked whole and relayed as they came, less the hop-by-hop ones; only
the fields that frame the message or that the proxy changes are picked out. Bodies are
relayed as bytes, never decoded, except a chunked request body, which is read whole (to
retry it on another replica) and sent on with a Content-Length.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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

_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
# a head's header lines, each led by its CRLF: NAME ":" VALUE, checked whole by `re` (in C)
_FIELDS = re.compile(rb"(?:\r\n" + _TOKEN + rb":[^\r\n]*)*")
# the fields the proxy acts on, found in a lowercased copy of the lines without splitting
# the others (most heads have 1-3): matching case-sensitively, all in C, cost a third of
# matching the lines as sent with IGNORECASE
_NOTED = re.compile(
    rb"\r\n(content-length|transfer-encoding|connection|host|expect|x-forwarded-(?:for|proto)"
    rb"|keep-alive|proxy-(?:connection|authenticate|authorization)|te|trailers?|upgrade)"
    rb":([^\r\n]*)"
)
_FORWARDED_FOR = re.compile(rb"\r\nx-forwarded-for:([^\r\n]*)", re.IGNORECASE)


@dataclass(slots=True)
class Head:
    """A request head (method, target) or a response head (status, reason); never changed
    once parsed.

    Its header lines are kept as received (`fields`) and relayed as they are, less the
    hop-by-hop ones: parsing each line into a pair and writing it back cost more than the
    rest of a request's path through the balancer."""

    first: bytes  # the method, or the status code's digits
    second: bytes  # the target, or the reason phrase
    version: bytes
    fields: bytes  # the header lines, each led by CRLF (b"" when there are none)
    # (name, value) of the fields the proxy acts on, in order, both lowercased; the value
    # with the whitespace around it
    noted: Headers
    names: frozenset[bytes]  # the names in `noted`
    length: int | None  # Content-Length, if any
    chunked: bool
    close: bool  # the sender will not (or asks us not to) reuse the connection
    # hop-by-hop fields, which are not relayed; a lone `Connection: keep-alive` is not
    # counted here: it is as true of the next hop whenever that is kept open (`keep_alive`)
    hop: bool
    keep_alive: bool  # a `Connection: keep-alive` field, naming nothing else

    @property
    def status(self) -> int:
        return int(self.first)

    def has(self, name: bytes) -> bool:
        """Whether a field the proxy acts on (lowercase `name`, one of _NOTED's) is there."""
        return name in self.names


def parse_request_head(data: bytes) -> Head:
    end = data.find(b"\r\n")
    line, fields = (data, b"") if end < 0 else (data[:end], data[end:])
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith(b"HTTP/1."):
        raise BadMessage(400, "a request line must be METHOD TARGET HTTP/1.x")
    return _head(parts[0], parts[1], parts[2], fields, default_close=parts[2] == b"HTTP/1.0")


def parse_response_head(data: bytes) -> Head:
    end = data.find(b"\r\n")
    line, fields = (data, b"") if end < 0 else (data[:end], data[end:])
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise BadMessage(502, "the replica's status line is not HTTP/1.x")
    reason = parts[2] if len(parts) == 3 else b""
    return _head(parts[1], reason, parts[0], fields, default_close=parts[0] == b"HTTP/1.0")


def _head(
    first: bytes, second: bytes, version: bytes, fields: bytes, *, default_close: bool
) -> Head:
    if not fields:
        return Head(
            first, second, version, b"", [], frozenset(), None, False, default_close, False, False
        )
    if _FIELDS.fullmatch(fields) is None:
        raise BadMessage(400, "a header line must be NAME: VALUE")
    noted: Headers = _NOTED.findall(fields.lower())
    length: int | None = None
    chunked = close = reopen = hop = keep_alive = False
    for name, value in noted:
        if name == b"host":  # in nearly every request, and nothing to do here
            continue
        if name == b"content-length":
            value = value.strip()
            if not value.isdigit() or (length is not None and int(value) != length):
                raise BadMessage(400, "invalid Content-Length")
            length = int(value)
        elif name == b"connection":
            tokens = {t.strip() for t in value.split(b",")}
            close = close or b"close" in tokens
            reopen = reopen or b"keep-alive" in tokens
            if tokens == {b"keep-alive"}:
                keep_alive = True
                continue  # the one hop-by-hop field relayed when the next hop stays open
            hop = True
        elif name == b"transfer-encoding":
            if value.strip() != b"chunked":
                raise BadMessage(501, "only chunked transfer coding is relayed")
            chunked = hop = True
        elif name in HOP_BY_HOP:
            hop = True
    if chunked and length is not None:
        raise BadMessage(400, "both Content-Length and Transfer-Encoding")
    # a head that asks for neither is closed when its version says so (HTTP/1.0)
    close = close or (default_close and not reopen)
    names = frozenset(dict(noted))  # the names, without a Python loop (a dict's keys)
    return Head(
        first, second, version, fields, noted, names, length, chunked, close, hop, keep_alive
    )


class LastHead:
    """`parse` (parse_request_head or parse_response_head) that remembers the last head it
    parsed on a connection and gives it again for the same bytes.

    A keep-alive peer often repeats its head byte for byte: a client polling one URL or
    calling one endpoint, a replica answering alike within the second of its Date field.
    Parsing was the largest part of a request's path through the balancer before its bytes
    went on (a Head is never changed once parsed, so it can be given twice)."""

    __slots__ = ("_data", "_head", "_parse")

    def __init__(self, parse: Callable[[bytes], Head]) -> None:
        self._parse = parse
        self._data = b""
        self._head: Head | None = None

    def __call__(self, data: bytes) -> Head:
        if data == self._data and self._head is not None:
            return self._head
        head = self._parse(data)  # a bad head raises BadMessage: nothing is remembered
        self._data, self._head = data, head
        return head


def end_to_end(
    head: Head, drop: frozenset[bytes] = frozenset(), *, keep_alive: bool = False
) -> bytes:
    """The head's header lines less the hop-by-hop ones, those its Connection field names,
    and those named in `drop` (lowercase; each one of _NOTED's names). With `keep_alive`
    (the next hop stays open), a lone `Connection: keep-alive` is kept if nothing else is
    cut: it is as true of that hop."""
    if not head.hop and (keep_alive or not head.keep_alive) and head.names.isdisjoint(drop):
        return head.fields  # the usual head: relayed as it came
    extra = connection_named(head) - HOP_BY_HOP - drop - {b"close"}
    fields = head.fields
    if not extra:  # cut out the noted fields to drop, keep the rest as it came
        out, at = [], 0
        for match in _NOTED.finditer(fields.lower()):
            name = match[1]
            if name in HOP_BY_HOP or name in drop:
                start, end = match.span()
                out.append(fields[at:start])
                at = end
        out.append(fields[at:])
        return b"".join(out)
    named = HOP_BY_HOP | drop | extra
    kept = [
        line for line in fields.split(b"\r\n")[1:] if line.partition(b":")[0].lower() not in named
    ]
    return b"".join(b"\r\n" + line for line in kept)


def connection_named(head: Head) -> set[bytes]:
    """The fields the head's Connection field names (lowercase): this hop's only."""
    named: set[bytes] = set()
    for name, value in head.noted:
        if name == b"connection":
            named.update(t.strip() for t in value.split(b","))
    return named


def forwarded_for(head: Head) -> list[bytes]:
    """The values of the head's X-Forwarded-For fields, as sent."""
    return [v.strip() for v in _FORWARDED_FOR.findall(head.fields)]


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
