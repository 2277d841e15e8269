"""`/api/gql`: GraphQL over HTTP, any method (mutations by POST)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.auth.service import Identity
from quire.errors import ApiError, NotFound
from quire.gql.persisted import PersistedQueries
from quire.gql.request import Operation, read_operation
from quire.gql.service import CODES, GqlService, Refused
from quire.http import json_response, quire_of, raw_json_response, service
from quire.persona.request import persona_of


def _errors(status: int, errors: list[dict[str, Any]], headers: dict[str, str] | None = None) -> Response:
    """A request that did not run: its errors, and the first one's message
    as `error` (Quire's word for what went wrong, read by REST clients)."""
    return json_response({"errors": errors, "error": errors[0]["message"]}, status, headers=headers)


def _answer_key(request: Request, identity: Identity) -> Any:
    """A GET query's answer is kept for the store's generation, as REST's
    list pages are, by everything it depends on besides the stored data:
    the query as sent and what the caller may read. Not kept: answers of
    a personalization (a schedule moves with the clock), of drafts and
    preview links (a token ends with time), and of the playground."""
    scope = request.scope
    raw = scope["query_string"]
    if request.method != "GET" or not raw or b"preview" in raw or b"draft" in raw or \
            any(k.startswith(b"x-persona") for k, _ in scope["headers"]) or b"persona" in raw:
        return None
    return (raw, identity.role, identity.permissions)


async def graphql(request: Request) -> Response:
    quire = quire_of(request)
    if not quire.settings.graphql.enabled:
        raise NotFound("GraphQL is turned off ([graphql] enabled)")
    identity = identify(request)  # a wrong key is a 401, as on every route
    answers = quire.cache.region("gql.answers", quire.settings.api.kept_answers_mb * 1024 * 1024)
    key = _answer_key(request, identity) if answers.size else None
    if key is not None:
        kept = answers.get(key)
        if kept is not None:
            return raw_json_response(kept)
    generation = quire.cache.generation  # before the work: an answer of an older generation is not kept
    try:
        operation = await read_operation(request, quire.max_body, quire.max_depth,
                                         quire.settings.graphql.max_query_bytes)
    except ApiError as exc:
        return _errors(exc.status, [{"message": exc.message, "extensions": {"code": CODES.get(exc.status, "ERROR")}}])
    response = await answer(request, operation, identity)
    if key is not None and response.status_code == 200 and not quire.cache.store.in_transaction():
        body = bytes(response.body)
        if b'"errors"' not in body[:12]:
            answers.put(key, body, generation, len(body) + 600)
    return response


async def answer(request: Request, operation: Operation, identity: Identity) -> Response:
    """Run a request's operation as `identity` (a key's, or the
    playground's logged-in user's)."""
    try:
        query = await service(request, PersistedQueries).resolve(operation)
    except ApiError as exc:
        return _errors(exc.status, [{"message": exc.message, "extensions": {"code": CODES.get(exc.status, "ERROR")}}])
    except Refused as exc:
        return _errors(exc.status, exc.errors)
    if query is None:
        return _errors(400, [{"message": "A query is missing: send it as `query` (JSON body, form field or "
                                         "query string)"}])
    try:
        result = await service(request, GqlService).run(query, operation.variables, operation.operation_name,
                                                         identity, request.method, persona_of(request))
    except Refused as exc:
        headers = {"Allow": "POST"} if exc.status == 405 else None
        return _errors(exc.status, exc.errors, headers)
    return json_response(result.body, result.status, headers=result.headers or None)


routes = [route("/api/gql", get=graphql, post=graphql)]
