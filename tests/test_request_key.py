"""Where a request's API key is read from (`auth.request.request_key`):
the query parameter `api_key` first, then the `api-key` header, then a
Bearer token; the raw query is parsed only when it may name `api_key`,
which must not change which key is found."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from quire.auth.request import request_key


def key_of(query: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None) -> str | None:
    scope = {"type": "http", "method": "GET", "path": "/", "query_string": query, "headers": headers or []}
    return request_key(Request(scope))


@pytest.mark.parametrize("query, expected", [
    (b"api_key=q1", "q1"),
    (b"limit=2&api_key=q1&skip=0", "q1"),
    (b"api%5Fkey=q2", "q2"),  # an escaped name is the same parameter
    (b"%61pi_key=q3&persona_vars%5Bname%5D=Ann", "q3"),
    (b"persona_vars%5Bname%5D=Ann", "h"),  # escapes in other names: the header's key
    (b"api_key=&x=1", "h"),  # empty: the next place counts
    (b"api_key=a&api_key=b", "b"),  # as the query parser answers a repeated name
    (b"xapi_key=q", "h"),
])
def test_query_parameter_first(query: bytes, expected: str) -> None:
    assert key_of(query, [(b"api-key", b"h")]) == expected


def test_header_then_bearer() -> None:
    assert key_of(headers=[(b"api-key", b"h1"), (b"authorization", b"Bearer t")]) == "h1"
    assert key_of(headers=[(b"authorization", b"Bearer  t2 ")]) == "t2"
    assert key_of(headers=[(b"authorization", b"bearer t3")]) == "t3"
    assert key_of(headers=[(b"authorization", b"Basic abc")]) is None
    assert key_of(headers=[(b"authorization", b"Bearer ")]) is None
    assert key_of() is None


def test_the_first_of_a_repeated_header_counts() -> None:
    assert key_of(headers=[(b"api-key", b"one"), (b"api-key", b"two")]) == "one"
    # an empty first api-key header is no key: the Bearer token counts, not a later api-key
    assert key_of(headers=[(b"api-key", b""), (b"api-key", b"two"), (b"authorization", b"Bearer t")]) == "t"
