"""Reading a GraphQL request: `query`, `variables`, `operationName` and
`extensions` from a JSON body, form fields (urlencoded or multipart, the
GraphQL multipart request's `operations` too), an `application/graphql`
body, or the query string, any method."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request

from quire.errors import BadRequest, PayloadTooLarge
from quire.http import check_depth, read_body


@dataclass
class Operation:
    query: str | None
    variables: dict[str, Any]
    operation_name: str | None
    extensions: dict[str, Any]
    method: str


def json_text(value: Any, name: str) -> Any:
    """A value that may come as JSON text (a query string's or form's
    field, an argument written as text): the value the text writes (an
    empty text is none); any other value as it is."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        raise BadRequest(f"<{name}> is not valid JSON") from None


async def read_operation(request: Request, max_body: int, max_json_depth: int, max_query_bytes: int) -> Operation:
    fields: dict[str, Any] = dict(request.query_params)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.method not in ("GET", "HEAD"):
        if kind == "application/json" or kind.endswith("+json"):
            body = await read_body(request, max_body)
            if body.strip():
                try:
                    data = orjson.loads(body)
                except orjson.JSONDecodeError:
                    raise BadRequest("The body is not valid JSON") from None
                if isinstance(data, list):
                    raise BadRequest("Batched operations (a JSON array) are not supported: send one at a time")
                if not isinstance(data, dict):
                    raise BadRequest('The body must be an object: {"query": "...", "variables": {...}}')
                check_depth(data, max_json_depth)
                fields.update(data)
        elif kind == "application/graphql":
            fields["query"] = (await read_body(request, max_body)).decode("utf-8", "replace")
        elif kind in ("application/x-www-form-urlencoded", "multipart/form-data"):
            async with request.form(max_files=20, max_fields=100, max_part_size=max_body) as form:
                given = {k: v for k, v in form.items() if isinstance(v, str)}
            operations = json_text(given.pop("operations", None), "operations")
            if operations is not None:  # the GraphQL multipart request: files are no variables here
                if not isinstance(operations, dict):
                    raise BadRequest("<operations> must be one operation object")
                given.update(operations)
            given.pop("map", None)
            fields.update(given)
    query = fields.get("query")
    if query is not None and not isinstance(query, str):
        raise BadRequest("<query> must be a text")
    if query is not None and len(query.encode()) > max_query_bytes:
        raise PayloadTooLarge(f"The query is longer than {max_query_bytes:,} bytes ([graphql] max_query_bytes)")
    variables = json_text(fields.get("variables"), "variables") or {}
    if not isinstance(variables, dict):
        raise BadRequest("<variables> must be an object")
    name = fields.get("operationName") or None
    if name is not None and not isinstance(name, str):
        raise BadRequest("<operationName> must be a text")
    extensions = json_text(fields.get("extensions"), "extensions") or {}
    if not isinstance(extensions, dict):
        raise BadRequest("<extensions> must be an object")
    return Operation(query, variables, name, extensions, request.method)
