"""Request helpers: json/json5/bracket query parameters, ints, bodies; JSON
responses rendered with orjson."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl

import json5
import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive

from quire import forwarded
from quire.errors import BadRequest, PayloadTooLarge, PreconditionFailed
from quire.numbers import content_length, parse_int

# the routes' JSON answers, imported from here with the other request helpers
from quire.responses import JSON_TYPE as JSON_TYPE
from quire.responses import json_response as json_response
from quire.responses import raw_json_response as raw_json_response
from quire.store.values import unsafe

if TYPE_CHECKING:
    from quire.modules import Services

T = TypeVar("T")
_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def quire_of(request: Request) -> Services:
    """The services of the app serving `request`."""
    return request.app.state.quire


def service(request: Request, kind: type[T]) -> T:
    """The service of type `kind` of the app serving `request`, typed:
    `service(request, PagesService)`."""
    services: Services = request.app.state.quire
    return services.get(kind)


def parse_json_text(text: str, name: str) -> Any:
    """Strict JSON first (fast), then the relaxed JSON5 form (`{title:'x'}`).
    What either lets through that no query or store can use (NaN, Infinity,
    integers beyond 64 bits, NUL, lone surrogates) is refused here, once, for
    every parameter and header that carries JSON."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            value = json5.loads(text)
        except (ValueError, TypeError, RecursionError):
            raise BadRequest(f"<{name}> is not valid json") from None
    return checked(value, name)


def checked(value: Any, name: str) -> Any:
    """`value`, or a 400 naming the parameter when it holds a value no query
    can use (see `values.unsafe`)."""
    problem = unsafe(value)
    if problem:
        raise BadRequest(f"<{name}> {problem}")
    return value


def json_param(request: Request, name: str) -> Any:
    """A json parameter: `name=<json>` or the bracket form `name[a][b]=v`.

    Bracket values that read as JSON scalars (numbers, true, false, null,
    quoted strings) take that type; anything else is a string.
    """
    params = request.query_params
    if name in params:
        return parse_json_text(params[name], name)
    prefix = name + "["
    result: dict[str, Any] | None = None
    for key, value in params.multi_items():
        if not key.startswith(prefix):
            continue
        parts = _BRACKET.findall(key[len(name):])
        if not parts or "".join(f"[{p}]" for p in parts) != key[len(name):]:
            raise BadRequest(f"<{name}> is not valid json")
        result = result if result is not None else {}
        _assign(result, parts, _bracket_value(value), name)
    return result if result is None else checked(result, name)


def _assign(target: dict[str, Any], parts: list[str], value: Any, name: str) -> None:
    node: Any = target
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "":  # name[a][] = list append
            if not isinstance(node, list):
                raise BadRequest(f"<{name}> is not valid json")
            node.append(value if last else {})
            node = node[-1]
            continue
        if not isinstance(node, dict):
            raise BadRequest(f"<{name}> is not valid json")
        if last:
            node[part] = value
        else:
            nxt = parts[i + 1]
            node = node.setdefault(part, [] if nxt == "" else {})


def _bracket_value(text: str) -> Any:
    if text in ("true", "false", "null") or text.startswith('"') or _looks_numeric(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    return text


def _looks_numeric(text: str) -> bool:
    return bool(re.fullmatch(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", text))


def int_param(request: Request, name: str, minimum: int = 0) -> int | None:
    """An integer query parameter (see `parse_int`); None when absent or empty."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    return parse_int(raw, name, minimum)


def check_depth(value: Any, limit: int) -> None:
    """Refuse JSON nested deeper than `limit` (arrays and objects)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node  # type: ignore[assignment]
        else:
            continue
        if depth > limit:
            raise BadRequest(f"JSON is nested deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children)


async def read_body(request: Request, limit: int) -> bytes:
    declared = content_length(request.headers.get("content-length"))
    if declared is not None and declared > limit:
        raise PayloadTooLarge(f"Request body is larger than {limit} bytes")
    chunks = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"Request body is larger than {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        # nobody reads this answer; it keeps a short body out of the 500s in the log
        raise BadRequest("The connection closed before the whole body arrived") from None
    return b"".join(chunks)


async def read_json(request: Request, limit: int, max_depth: int) -> Any:
    body = await read_body(request, limit)
    if not body.strip():
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise BadRequest("Request body is not valid JSON") from None
    check_depth(data, max_depth)
    return data


async def read_data(request: Request) -> dict[str, Any]:
    """The `data` object of a `{"data": {...}}` write body; without one,
    412 `Item data is missing` (the contract's message for every write)."""
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise PreconditionFailed("Item data is missing")
    return data


def client_address(request: Request) -> str:
    """The client's address: the peer, or the address the trusted proxies
    put in X-Forwarded-For (`[server] proxy_hops`, see quire.forwarded).
    Form submissions and admin logins are counted per client."""
    peer = request.client.host if request.client else None
    hops = quire_of(request).settings.server.proxy_hops
    return forwarded.client_address(peer, request.headers.getlist("x-forwarded-for"), hops)


async def read_small_form(request: Request, max_bytes: int, max_fields: int) -> dict[str, str]:
    """The fields of a url-encoded form of at most `max_bytes` (counted as the
    body arrives, so a chunked body without Content-Length is capped too):
    413 when larger, 400 when it is not url-encoded or has more fields.
    For the admin's forms and the provider's back-channel logout."""
    return dict(await read_form_pairs(request, max_bytes, max_fields))


async def read_form_pairs(request: Request, max_bytes: int, max_fields: int) -> list[tuple[str, str]]:
    """`read_small_form` keeping every value of a repeated name, in order
    (the studio's checkboxes of selected rows)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in ("application/x-www-form-urlencoded", ""):  # "": an empty POST, no fields
        raise BadRequest("The form must be sent as application/x-www-form-urlencoded")
    body = await read_body(request, max_bytes)
    try:
        return parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=max_fields,
                         strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        raise BadRequest(f"The form must be UTF-8 with at most {max_fields} fields") from None


def limited_receive(receive: Receive, limit: int) -> Receive:
    """`receive` that fails with a 413 once the body passed `limit` bytes
    (an upload that says nothing of its length, or lies about it)."""
    seen = [0]

    async def wrapped() -> Message:
        message = await receive()
        if message["type"] == "http.request":
            seen[0] += len(message.get("body", b""))
            if seen[0] > limit:
                raise PayloadTooLarge(f"Upload is larger than {limit} bytes")
        return message

    return wrapped
