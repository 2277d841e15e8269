"""An open event stream at the ASGI level, in the test's own event loop:
the app's answer read message by message, the client's leaving told by
`http.disconnect` when the block ends (TestClient reads a whole answer,
which an endless stream never ends)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio


class Stream:
    """An open stream on the app, message by message."""

    def __init__(self, receive_messages: Any) -> None:
        self._messages = receive_messages
        self.start: dict[str, Any] = {}
        self.finished = False

    @property
    def headers(self) -> dict[str, str]:
        return {k.decode().lower(): v.decode() for k, v in self.start.get("headers", [])}

    async def chunk(self) -> bytes:
        message = await self._messages.receive()
        assert message["type"] == "http.response.body"
        if not message.get("more_body", False):
            self.finished = True
        return bytes(message.get("body", b""))


@asynccontextmanager
async def open_stream(app: Any, path: str, headers: list[tuple[bytes, bytes]],
                      query: bytes = b"") -> AsyncIterator[Stream]:
    """`GET path?query` with `headers` on `app`, once its status is sent."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query,
             "root_path": "", "headers": [(b"host", b"testserver"), *headers], "client": ("127.0.0.1", 50000),
             "server": ("testserver", 80)}
    send_stream, receive_stream = anyio.create_memory_object_stream[dict[str, Any]](100)
    disconnected = anyio.Event()
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        await send_stream.send(message)

    # the streams are closed however the block ends: one left to the
    # garbage collector warns in whichever test runs next
    async with send_stream, receive_stream, anyio.create_task_group() as tasks:
        tasks.start_soon(app, scope, receive, send)
        stream = Stream(receive_stream)
        with anyio.fail_after(10):  # the status only: the block itself may take as long as it needs
            stream.start = await receive_stream.receive()
        assert stream.start["type"] == "http.response.start"
        try:
            yield stream
        finally:
            disconnected.set()
            tasks.cancel_scope.cancel()
