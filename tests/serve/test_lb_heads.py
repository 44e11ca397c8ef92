"""The balancer's head handling: header lines relayed byte for byte, less exactly the
hop-by-hop ones (RFC 9110 7.6.1: those listed, and those the Connection field names), and
heads a proxy must not pass on refused."""

from __future__ import annotations

import pytest

from skyform.serve.lb.http1 import (
    BadMessage,
    LastHead,
    end_to_end,
    parse_request_head,
    parse_response_head,
)


def test_a_response_keeps_its_fields_as_sent_less_the_hop_by_hop_ones():
    head = parse_response_head(
        b"HTTP/1.1 200 OK\r\nServer:  odd  spacing \r\nConnection: keep-alive, X-Hop\r\n"
        b"X-Hop: 1\r\nKeep-Alive: timeout=5\r\nSet-Cookie: a=1\r\nContent-Length: 2\r\n"
        b"Set-Cookie: b=2\r\nTE: trailers"
    )
    assert head.length == 2 and not head.close
    assert end_to_end(head) == (
        b"\r\nServer:  odd  spacing \r\nSet-Cookie: a=1\r\nContent-Length: 2\r\nSet-Cookie: b=2"
    )


def test_field_names_are_matched_whatever_their_case():
    head = parse_response_head(
        b"HTTP/1.1 200 OK\r\ncOnNeCtIoN: close\r\nTRANSFER-ENCODING: chunked\r\nX-A: b"
    )
    assert head.close and head.chunked
    assert end_to_end(head) == b"\r\nX-A: b"


def test_a_request_drops_what_the_proxy_sets_itself():
    head = parse_request_head(
        b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-continue\r\n"
        b"X-Forwarded-For: 10.0.0.1\r\nAuthorization: Bearer t"
    )
    drop = frozenset({b"content-length", b"expect", b"x-forwarded-for"})
    assert end_to_end(head, drop) == b"\r\nHost: h\r\nAuthorization: Bearer t"
    assert head.has(b"host") and not head.has(b"upgrade")


def test_a_field_named_like_a_framing_one_is_not_taken_for_it():
    head = parse_request_head(b"GET / HTTP/1.1\r\nContent-Length-X: 9\r\nX-TE: 1\r\nHostname: a")
    assert head.length is None and not head.has(b"host")
    assert end_to_end(head) == head.fields


@pytest.mark.parametrize(
    "line",
    [
        b"Name : value",  # space before the colon (a smuggling vector)
        b" folded: value",  # obsolete line folding
        b"no colon",
        b": empty name",
        b"Bad\x00Name: v",
    ],
)
def test_a_malformed_field_line_is_refused(line):
    with pytest.raises(BadMessage) as refused:
        parse_request_head(b"GET / HTTP/1.1\r\nHost: h\r\n" + line)
    assert refused.value.status == 400


def test_two_different_lengths_or_length_and_chunked_are_refused():
    for fields in (
        b"Content-Length: 3\r\nContent-Length: 4",
        b"Content-Length: 3\r\nTransfer-Encoding: chunked",
        b"Content-Length: -1",
    ):
        with pytest.raises(BadMessage):
            parse_request_head(b"POST / HTTP/1.1\r\n" + fields)
    assert (
        parse_request_head(b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3").length == 3
    )


def test_a_lone_keep_alive_is_relayed_only_to_a_hop_kept_open():
    head = parse_response_head(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2")
    assert not head.close and not head.hop
    assert end_to_end(head, keep_alive=True) == head.fields  # as true of the next hop
    assert end_to_end(head) == b"\r\nContent-Length: 2"  # a hop about to close: cut
    old = parse_response_head(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2")
    assert not old.close  # an HTTP/1.0 answer that asks to stay open


def test_a_repeated_head_is_parsed_once_and_a_changed_or_bad_one_anew():
    parsed: list[bytes] = []

    def parse(data: bytes):
        parsed.append(data)
        return parse_request_head(data)

    last = LastHead(parse)
    a, b = b"GET /a HTTP/1.1\r\nHost: h", b"GET /b HTTP/1.1\r\nHost: h"
    assert last(a) is last(a) and parsed == [a]
    assert last(b).second == b"/b" and last(a).second == b"/a"
    bad = b"GET /a HTTP/1.1\r\nHost : h"
    for _ in range(2):  # refused each time: a bad head is never remembered
        with pytest.raises(BadMessage):
            last(bad)
    assert last(a).second == b"/a"
