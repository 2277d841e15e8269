"""JSON responses, rendered with orjson: the one answer shape of the API,
used by the dispatcher (`asgi.py`) and by every route (through `http.py`)."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

JSON_TYPE = "application/json; charset=utf-8"


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type=JSON_TYPE, headers=headers)


def raw_json_response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status_code=status, media_type=JSON_TYPE, headers=headers)
