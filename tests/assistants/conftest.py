"""An MCP client of the SDK's own on a Quire app in this process (its
Streamable HTTP transport over an ASGI transport: no socket)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2


@contextlib.asynccontextmanager
async def mcp_client(app: Any, key: str | None, path: str = "/mcp", client: str = "test-assistant",
                     **headers: str) -> AsyncIterator[Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation

    sent = {"api-key": key, **headers} if key else dict(headers)
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), headers=sent, base_url="http://testserver",
                              timeout=30)
    async with http, Client(streamable_http_client(f"http://testserver{path}", http_client=http), cache=None,
                            client_info=Implementation(name=client, version="1.0")) as connected:
        yield connected


def answer(result: Any) -> Any:
    """A tool's answer: its structured content, else its text as JSON; a
    tool error raises with the assistant's message."""
    if result.is_error:
        raise ToolRefused(result.content[0].text)
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


class ToolRefused(Exception):
    pass
