"""JSON responses, rendered with orjson: the one answer shape of the API,
used by the dispatcher (`asgi.py`) and by every route (through `http.py`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Mapping
from typing import Any

import orjson
from starlette.responses import Response, StreamingResponse

JSON_TYPE = "application/json; charset=utf-8"
_CONTENT_TYPE = (b"content-type", JSON_TYPE.encode("latin-1"))


class JsonResponse(Response):
    """JSON bytes as an answer: the same status line and headers Starlette's
    `Response` makes (the caller's headers, then content-length and
    content-type unless given), made directly, since every API answer is
    one and the general path costs several microseconds of checks."""

    media_type = JSON_TYPE

    def __init__(self, body: bytes, status_code: int = 200, headers: Mapping[str, str] | None = None) -> None:
        self.status_code = status_code
        self.background = None
        self.body = body
        length = content_type = True
        if headers is None:
            raw: list[tuple[bytes, bytes]] = []
        else:
            raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
            for name, _ in raw:
                length = length and name != b"content-length"
                content_type = content_type and name != b"content-type"
        if length and status_code >= 200 and status_code not in (204, 304):
            raw.append((b"content-length", str(len(body)).encode("latin-1")))
        if content_type:
            raw.append(_CONTENT_TYPE)
        self.raw_headers = raw


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JsonResponse(orjson.dumps(data), status, headers)


def raw_json_response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JsonResponse(body, status, headers)


class ClosingStream(StreamingResponse):
    """A streamed answer that closes its body when the answer ends, also
    when the client went away half-way: Starlette then stops sending
    without closing the body, and the rows' private database connection
    would stay open until the garbage collector found it."""

    def __init__(self, body: AsyncGenerator[bytes, None], media_type: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(body, media_type=media_type, headers=headers)
        self._body = body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._body.aclose()


async def chained(first: bytes, rest: Generator[bytes, None, None]) -> AsyncGenerator[bytes, None]:
    """`first`, then the chunks of `rest`, closing `rest` however it ends
    (its `finally` closes the database connection)."""
    try:
        yield first
        for chunk in rest:
            yield chunk
    finally:
        rest.close()
