"""HTTP routes of the audit log: `GET /api/audit` (a filtered page of
entries, newest first) and `GET /api/audit/{id}` (one entry). Both need the
`audit/read` permission."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.audit.service import AuditQuery, AuditService, filter_text, seconds
from quire.auth.request import identify
from quire.errors import BadRequest
from quire.http import int_param, json_response, service

READ = "audit/read"
MAX_LIMIT = 200
# Deeper pages are refused: skipping means reading every row before the
# page; narrow the time range (`to`) instead.
MAX_SKIP = 100_000
KNOWN = frozenset({"action", "resource", "who", "id", "from", "to", "limit", "skip", "api_key"})


def query_of(request: Request) -> AuditQuery:
    """The filters of a request; 400 naming a parameter that is not one, or
    a value no entry can match."""
    params = request.query_params
    unknown = sorted({name for name in params if name not in KNOWN})
    if unknown:
        shown = ", ".join(name[:40] for name in unknown[:5])
        raise BadRequest(f"Unknown parameters: {shown}", fields=unknown[:5])
    start, end = seconds("from", params.get("from")), seconds("to", params.get("to"))
    if start is not None and end is not None and start > end:
        raise BadRequest("from must not be later than to", fields=["from"])
    return AuditQuery(action=filter_text("action", params.get("action")),
                      resource=filter_text("resource", params.get("resource")),
                      who=filter_text("who", params.get("who")), item=filter_text("id", params.get("id")),
                      start=start, end=end)


async def list_entries(request: Request) -> Response:
    identify(request).require(READ)
    query = query_of(request)
    limit = int_param(request, "limit")
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit must be between 1 and {MAX_LIMIT}", fields=["limit"])
    skip = int_param(request, "skip") or 0
    if skip > MAX_SKIP:
        raise BadRequest(f"skip must be at most {MAX_SKIP}: narrow the time range with `to` instead",
                         fields=["skip"])
    entries, total = service(request, AuditService).find(query, limit or 50, skip)
    return json_response({"data": entries, "total": total})


async def get_entry(request: Request) -> Response:
    identify(request).require(READ)
    return json_response(service(request, AuditService).get(request.path_params["id"]))


routes = [route("/api/audit", get=list_entries), route("/api/audit/{id}", get=get_entry)]
