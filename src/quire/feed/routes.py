"""`GET /api/content/changes`: the change feed, as Server-Sent Events for a
client that accepts `text/event-stream`, else as JSON pages to pull
(docs/delivery.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from quire.asgi import route
from quire.auth.request import identify
from quire.errors import ApiError, BadRequest
from quire.feed.log import ChangeLog
from quire.feed.stream import Hub, stream
from quire.feed.view import TooOld, View, changes, make_view
from quire.http import int_param, json_param, json_response, service

MAX_LIMIT = 1000


class Gone(ApiError):
    status = 410


def _view(request: Request) -> View:
    identity = identify(request)
    listed = request.query_params.get("models")
    models = None if listed is None else [m.strip() for m in listed.split(",") if m.strip()]
    return make_view(service(request, Hub).readers, identity, models, json_param(request, "filter"),
                     request.query_params.get("locale") or None, int_param(request, "populate") or 0,
                     json_param(request, "fields"))


def _since(text: str | None) -> int:
    if text is None or text == "":
        return 0
    if not (text.isascii() and text.isdigit()) or len(text) > 18:  # "١٢" is digits to Python
        raise BadRequest("since must be a token this feed gave (next), or 0", fields=["since"])
    return int(text)


async def get_changes(request: Request) -> Response:
    view = _view(request)
    hub = service(request, Hub)
    if "text/event-stream" in request.headers.get("accept", ""):
        who = view.identity.key_id or f"address:{request.client.host if request.client else '?'}"
        hub.check(who)  # 429 now, while an answer can still say so
        last = request.headers.get("last-event-id") or request.query_params.get("since")
        return StreamingResponse(stream(hub, view, who, last, request.is_disconnected), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
    log = service(request, ChangeLog)
    since = _since(request.query_params.get("since"))
    limit = int_param(request, "limit")
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit must be 1 to {MAX_LIMIT}", fields=["limit"])
    if since == 0:
        since = log.pruned()  # 0: from the oldest change the feed keeps
    try:
        found, upto = changes(service(request, Hub).readers, log, view, since, limit or 100)
    except TooOld:
        raise Gone(f"The changes after {since} are older than the feed keeps: read everything again "
                   "(since=0 and the lists), then go on from its next") from None
    return json_response({"data": found, "next": str(upto)}, headers={"Cache-Control": "no-store"})


routes = [route("/api/content/changes", get=get_changes)]
