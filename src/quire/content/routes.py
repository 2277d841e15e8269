"""HTTP routes of the content API (`/api/content/...`)."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import AsyncGenerator, Generator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote_plus

import anyio.to_thread
import orjson
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.auth.service import Identity
from quire.conditional import answer_etag, matches
from quire.content import transfer
from quire.content.aggregate import run_aggregate
from quire.content.fill import rev_of
from quire.content.models import ModelService
from quire.content.preview import DEFAULT_SECONDS
from quire.content.service import ContentService, ReadOptions
from quire.content.writes import REV_RULE, Expected, is_rev
from quire.counting import tell
from quire.errors import BadRequest, NotFound, PreconditionFailed, Unavailable
from quire.http import (
    JSON_TYPE,
    int_param,
    json_param,
    json_response,
    parse_json_text,
    quire_of,
    raw_json_response,
    read_body,
    read_data,
    read_json,
    service,
)
from quire.ids import is_id
from quire.persona.request import Persona, persona_of
from quire.responses import ClosingStream, chained
from quire.ui.presence import PresenceService

if TYPE_CHECKING:
    from quire.cache import Region
    from quire.modules import Services



def read_options(request: Request, *, listing: bool = False) -> ReadOptions:
    if not request.scope["query_string"]:
        return ReadOptions()  # reads by id mostly come without parameters
    opts = ReadOptions(
        filter=json_param(request, "filter"),
        sort=json_param(request, "sort"),
        fields=json_param(request, "fields"),
        populate=int_param(request, "populate") or 0,
        locale=request.query_params.get("locale") or None,
    )
    if listing:
        opts.limit = int_param(request, "limit")
        opts.skip = int_param(request, "skip")
        opts.after = request.query_params.get("after") or None
    return opts


async def get_item(request: Request) -> Response:
    identity = identify(request)
    if request.scope["query_string"] and ("draft" in request.query_params or "preview" in request.query_params):
        return _draft_answer(request, identity)
    quire = quire_of(request)
    item_id = request.path_params.get("id")
    # An item's answer by id is kept for the store's generation like a list
    # page's, in a region of its own: reads by id spread over every item,
    # and must not push out the pages.
    answers = quire.cache.region("content.item_answers", quire.settings.api.kept_answers_mb * 1024 * 1024)
    key = _answer_key(request.scope, identity) if item_id is not None and answers.size else None
    if key is not None:
        kept = _kept(answers, key, request, "item")
        if kept is not None:
            return kept
    generation = quire.cache.generation  # before the work: an answer of an older generation is not kept
    model = request.path_params["model"]
    opts = read_options(request)
    persona = persona_of(request)
    content = service(request, ContentService)
    if item_id is not None and not opts.transforms:
        raw = content.item_raw(model, item_id, identity)
        headers = _etag(rev_of(raw))
        body = raw if persona is None else orjson.dumps(persona.apply(orjson.loads(raw)))
    else:
        item, rev = content.item_with_rev(model, item_id, opts, identity)
        headers = _etag(rev)
        body = orjson.dumps(item if persona is None else persona.apply(item))
    if key is not None:
        _keep(quire, answers, key, persona, body, headers, generation)
    return raw_json_response(body, headers=headers)


def _draft_answer(request: Request, identity: Identity) -> Response:
    """`?draft=1` (who may update the model) or `?preview=<token>` (anyone
    holding a preview link of this item): the item's draft if it has one,
    else the item in whatever state, with `_draft` saying which; never
    kept among the cached answers."""
    model, item_id = request.path_params["model"], request.path_params.get("id")
    content = service(request, ContentService)
    token = request.query_params.get("preview")
    reader = identity  # links are read with the caller's own permissions
    if token is not None:
        identity = content.preview_identity(model, item_id, token, identity)
    elif not flag(request, "draft"):
        return _published_answer(request, identity)
    item, rev, is_draft = content.item_or_draft(model, item_id, read_options(request), identity, links_as=reader)
    headers = {**_etag(rev), "Cache-Control": "no-store"}
    return json_response({**item, "_draft": is_draft}, headers=headers)


def _published_answer(request: Request, identity: Identity) -> Response:
    """`?draft=0`: the item as without the parameter."""
    item, rev = service(request, ContentService).item_with_rev(
        request.path_params["model"], request.path_params.get("id"), read_options(request), identity)
    return json_response(item, headers=_etag(rev))


def flag(request: Request, name: str) -> bool:
    """A yes/no query parameter: 1/true or 0/false (400 for anything else)."""
    raw = request.query_params.get(name)
    if raw is None or raw in ("", "0", "false"):
        return False
    if raw in ("1", "true"):
        return True
    raise BadRequest(f"<{name}> must be 1 or 0", fields=[name])


def _etag(rev: int) -> dict[str, str]:
    """An item answer's revision, as a strong entity tag."""
    return {"ETag": f'"{rev}"'}


def if_match(request: Request) -> Expected:
    """The revision an If-Match header names: `"7"`, also weak (`W/"7"`,
    as a proxy may pass it on) or bare (`7`); `*` asks for a stored item.
    Anything else, a list of several tags too, is a 400."""
    value = request.headers.get("if-match")
    if value is None:
        return None
    tag = value.strip()
    if tag == "*":
        return "*"
    if tag.startswith("W/"):
        tag = tag[2:]
    if len(tag) >= 2 and tag[0] == tag[-1] == '"':
        tag = tag[1:-1]
    tag = tag.split("-", 1)[0]  # an answer's ETag: "7-<digest of its bytes>" is revision 7
    if not tag.isascii() or not tag.isdigit() or len(tag) > 18:
        raise BadRequest('If-Match must name one revision, as the item\'s ETag does: "7"', fields=["_rev"])
    return int(tag)


def _personalized(rows: list[bytes], persona: Persona | None, quire: Services, view: Any) -> list[bytes]:
    """Rows as sent: the stored bytes, or resolved for the request's persona
    (called right after the rows were read, so the generation is theirs)."""
    return rows if persona is None else persona.apply_rows(rows, quire.cache, view)


def _view(model: str, opts: ReadOptions, identity: Identity) -> Any:
    """What a list row's bytes depend on besides the stored item."""
    fields = None if opts.fields is None else orjson.dumps(opts.fields)
    return (model, opts.locale, opts.populate, fields, identity.role, identity.permissions)


async def save_item(request: Request) -> Response:
    identity = identify(request)
    draft = flag(request, "draft") if request.scope["query_string"] else False
    data = await read_data(request)
    content = service(request, ContentService)
    if draft:
        item = await content.save_draft(request.path_params["model"], data, identity, if_match=if_match(request))
    else:
        item = await content.save(request.path_params["model"], data, identity, if_match=if_match(request))
    return json_response(item, headers=_etag(item["_rev"]))


async def _options(request: Request) -> dict[str, Any]:
    """The optional JSON object of a publish or preview request (no body: {})."""
    if not await request.body():
        return {}
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    if not isinstance(body, dict):
        raise BadRequest("The body must be a JSON object (or empty)")
    return body


async def publish_item(request: Request) -> Response:
    identity = identify(request)
    body = await _options(request)
    expected = body.get("_rev")
    if expected is not None and not is_rev(expected):
        raise BadRequest(REV_RULE, fields=["_rev"])
    unknown = sorted(set(body) - {"_rev"})
    if unknown:
        raise BadRequest(f"Unknown keys: {', '.join(map(str, unknown))} (a publish takes _rev)", fields=unknown)
    item = await service(request, ContentService).publish(
        request.path_params["model"], request.path_params.get("id"), identity, expected=expected)
    return json_response(item, headers=_etag(item["_rev"]))


async def unpublish_item(request: Request) -> Response:
    identity = identify(request)
    item = await service(request, ContentService).unpublish(
        request.path_params["model"], request.path_params.get("id"), identity)
    return json_response(item, headers=_etag(item["_rev"]))


async def end_previews(request: Request) -> Response:
    """End every preview link given out (items and pages)."""
    await service(request, ContentService).end_previews(identify(request))
    return json_response({"success": True})


async def discard_draft(request: Request) -> Response:
    identity = identify(request)
    if not await service(request, ContentService).discard_draft(
            request.path_params["model"], request.path_params.get("id"), identity):
        raise NotFound("This item has no draft")
    return json_response({"success": True})


async def preview_link(request: Request) -> Response:
    """A preview token for one item, and the model's preview links filled in."""
    identity = identify(request)
    body = await _options(request)
    content = service(request, ContentService)
    link = content.preview_link(request.path_params["model"], request.path_params.get("id"), identity,
                                body.get("seconds", DEFAULT_SECONDS), body.get("locale"))
    return json_response(link, headers={"Cache-Control": "no-store"})


async def delete_item(request: Request) -> Response:
    identity = identify(request)
    await service(request, ContentService).delete(request.path_params["model"], request.path_params["id"], identity)
    return json_response({"success": True})


async def list_items(request: Request) -> Response:
    identity = identify(request)
    quire = quire_of(request)
    scope = request.scope
    # A page's answer is kept for the store's generation (see `_answer_key`):
    # asked again, it is sent as it is, before any parameter is parsed.
    answers = quire.cache.region("content.answers", quire.settings.api.kept_answers_mb * 1024 * 1024)
    key = _answer_key(scope, identity)
    kept = _kept(answers, key, request, "list") if answers.size else None
    if kept is not None:
        return kept
    generation = quire.cache.generation  # before the work: an answer of an older generation is not kept
    content = service(request, ContentService)
    model = request.path_params["model"]
    opts = read_options(request, listing=True)
    persona = persona_of(request)
    view = None if persona is None else _view(model, opts, identity)
    if not opts.paged or opts.whole_with_total:
        # limit=0 with skip: the envelope's total is counted first, then the
        # rows are streamed like an unbounded list's
        total = content.count(model, opts, identity) if opts.whole_with_total else None
        stream = content.list_stream(model, opts, identity)
        # The query runs and its first rows are read before the status is
        # sent, so that a failing query still answers with its own status
        # and {"error": ...}; once the status is out, a failure can only
        # break off the answer (see asgi.App._http).
        first = _personalized(next(stream, []), persona, quire, view)
        chunks = (_personalized(rows, persona, quire, view) for rows in stream)
        return ClosingStream(_stream_array(first, chunks, stream, total), media_type=JSON_TYPE)
    page = content.list_page(model, opts, identity)
    body = b"[" + b",".join(_personalized(page.rows, persona, quire, view)) + b"]"
    headers = None
    if page.total is not None:
        # the cursor only ever holds [A-Za-z0-9_-.]: no escaping needed
        more = b"" if page.next is None else b',"next":"' + page.next.encode() + b'"'
        body = b'{"data":' + body + b',"meta":{"total":' + str(page.total).encode() + more + b"}}"
    elif page.next is not None:
        # a bare array (Cockpit's shape) keeps its body; the next page is a header
        headers = {"Link": _next_link(request, page.next)}
    if answers.size:
        _keep(quire, answers, key, persona, body, headers, generation)
    return raw_json_response(body, headers=headers)


_ANSWER_ENTRY = 600  # what an entry costs besides its body (key, tuple, headers, dict slot; tracemalloc)


def _kept(answers: Region, key: Any, request: Request, kind: str) -> Response | None:
    """The kept answer of `key`, unless it was resolved for a persona
    schedule's minute that has passed; its 304 when the client sent its
    ETag (nothing else to make: quire.conditional adds Cache-Control)."""
    kept = answers.get(key)
    tell("kept_read", kind, kept is not None)
    if kept is not None and (kept[0] < 0 or kept[0] == int(time.time()) // 60):
        wanted = request.headers.get("if-none-match")
        if wanted is not None and matches(wanted, kept[2]["ETag"]):
            return Response(status_code=304, headers={"ETag": kept[2]["ETag"]})
        return raw_json_response(kept[1], headers=kept[2])
    return None


def _keep(quire: Services, answers: Region, key: Any, persona: Persona | None, body: bytes,
          headers: dict[str, str] | None, generation: int) -> None:
    if not quire.cache.store.in_transaction():
        # resolved for a persona with a schedule: good for this minute only
        minute = -1 if persona is None or persona.timed_minute is None else persona.timed_minute
        # its ETag made once: a kept answer's 304 hashes nothing (quire.conditional)
        tagged = {**(headers or {}), "ETag": answer_etag(body, (headers or {}).get("ETag"))}
        answers.put(key, (minute, body, tagged), generation, _ANSWER_ENTRY + len(body))


def _answer_key(scope: Any, identity: Identity) -> Any:
    """Everything a list page's answer depends on besides the stored data
    (which the generation stands for) and, with a persona schedule, the
    minute: the path (the model), the query as sent (every option, the
    persona's parameters), the persona headers, and what the caller may
    read (role and permissions, as for populated rows: two keys share an
    answer only when they have the same)."""
    persona = tuple((k, v) for k, v in scope["headers"] if k.startswith(b"x-persona"))
    return (scope["path"], scope["query_string"], persona, identity.role, identity.permissions)


def _next_link(request: Request, cursor: str) -> str:
    """RFC 8288: this request with `after` set to the cursor, as a
    reference relative to the request's own address. Made from the raw
    query string, its other parameters kept as sent (rebuilding the URL
    through Starlette cost a quarter of an uncached page)."""
    scope = request.scope
    kept = [part for part in scope["query_string"].decode("latin-1").split("&")
            if part and unquote_plus(part.partition("=")[0]) != "after"]
    kept.append(f"after={cursor}")  # a cursor only holds [A-Za-z0-9_-.]: nothing to escape
    path = quote(scope.get("root_path", "") + scope["path"], safe="/:@!$&'()*+,;=-._~")
    return f'<{path}?{"&".join(kept)}>; rel="next"'


async def _stream_array(head: list[bytes], chunks: Any, rows: Generator[Any, None, None],
                        total: int | None = None) -> AsyncGenerator[bytes, None]:
    """`[rows...]`, or `{"data":[rows...],"meta":{"total":N}}` given a total."""
    try:
        yield (b"[" if total is None else b'{"data":[') + b",".join(head)
        first = not head
        for part in chunks:
            if not part:
                continue
            text = b",".join(part)
            yield text if first else b"," + text
            first = False
        yield b"]" if total is None else b'],"meta":{"total":' + str(total).encode() + b"}}"
    finally:
        rows.close()  # its `finally` closes the database connection


async def get_tree(request: Request) -> Response:
    identity = identify(request)
    parent = request.query_params.get("parent") or None
    tree = service(request, ContentService).tree(request.path_params["model"], parent, read_options(request), identity)
    persona = persona_of(request)
    return json_response(tree if persona is None else persona.apply(tree))


async def batch(request: Request) -> Response:
    identity = identify(request)
    quire = quire_of(request)
    spec = json_param(request, "models")
    if spec is None:
        raise PreconditionFailed("<models> parameter is missing")
    if not isinstance(spec, dict):
        raise BadRequest("<models> must be an object keyed by alias")
    out: dict[str, Any] = {}
    for alias, options in spec.items():
        options = options or {}
        if not isinstance(options, dict):
            raise BadRequest(f"<models>.{alias} must be an object")
        name = options.get("model", alias)
        model = service(request, ModelService).find(name) if isinstance(name, str) else None
        if model is None or not identity.can(f"content/{name}/read"):
            continue  # left out, as the contract says
        out[alias] = _batch_entry(quire, model.name, model.type, options, identity)
    persona = persona_of(request)
    return json_response(out if persona is None else persona.apply(out))


def _batch_entry(quire: Services, name: str, kind: str, options: dict[str, Any], identity: Any) -> Any:
    opts = ReadOptions(
        filter=options.get("filter"),
        sort=options.get("sort"),
        fields=options.get("fields"),
        limit=_opt_int(options, "limit"),
        skip=_opt_int(options, "skip"),
        populate=_opt_int(options, "populate") or 0,
        locale=options.get("locale"),
        after=_opt_cursor(options),
    )
    if kind == "singleton":
        return quire.content.item(name, None, opts, identity)
    if kind == "tree" and not opts.paged:
        return quire.content.tree(name, None, opts, identity)
    if not opts.paged:
        rows = [r for chunk in quire.content.list_stream(name, opts, identity) for r in chunk]
        return [orjson.loads(r) for r in rows]
    page = quire.content.list_page(name, opts, identity)
    docs = [orjson.loads(r) for r in page.rows]
    if page.total is None:
        return docs  # a bare array has no room for the cursor: ask with skip=0 for it
    meta: dict[str, Any] = {"total": page.total}
    if page.next is not None:
        meta["next"] = page.next
    return {"data": docs, "meta": meta}


def _opt_cursor(options: dict[str, Any]) -> str | None:
    value = options.get("after")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadRequest("<models> option after must be the cursor text of a previous page")
    return value


def _opt_int(options: dict[str, Any], key: str) -> int | None:
    value = options.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"<models> option {key} must be a non-negative integer")
    return value


# List parameters an aggregation takes as stages instead: refused, not
# silently ignored, so a request written for a list does not half-work.
_AGGREGATE_INSTEAD = {"filter": "$match", "sort": "$sort", "fields": "$project", "limit": "$limit",
                      "skip": "$skip", "populate": "$lookup"}


async def aggregate_items(request: Request) -> Response:
    identity = identify(request)
    params = request.query_params
    for name, stage in _AGGREGATE_INSTEAD.items():
        if name in params or any(k.startswith(name + "[") for k in params):
            raise BadRequest(f"<{name}> is not a parameter of aggregate; use a {stage} stage")
    pipeline = _pipeline_param(params.get("pipeline"))
    content = service(request, ContentService)
    # A pipeline may hold up to `[content] aggregate_max_bytes` in Python
    # for up to `aggregate_max_seconds`: in a worker thread, so other
    # requests of this worker go on meanwhile, and only a few at once
    # (`aggregations_at_once`), so a flood of them is told to come back
    # instead of piling up.
    async with content.aggregation_slots.taken(AGGREGATION_WAIT_SECONDS, AggregationsBusy):
        body = await anyio.to_thread.run_sync(
            run_aggregate, content, request.path_params["model"], pipeline, params.get("locale") or None, identity,
        )
    return raw_json_response(body)


AGGREGATION_WAIT_SECONDS = 5.0


class AggregationsBusy(Unavailable):
    def __init__(self, retry_after: int) -> None:
        super().__init__("Busy with other aggregations; try again shortly", retry_after)


def _pipeline_param(text: str | None) -> Any:
    """The `pipeline` parameter: JSON or JSON5 as every JSON parameter (and
    refused for the same values); none is `[]`."""
    if text is None:
        return []
    try:
        return parse_json_text(text, "pipeline")
    except BadRequest as exc:
        if exc.message == "<pipeline> is not valid json":
            raise BadRequest("Pipeline is not valid json") from None  # Cockpit's message
        raise


async def export_items(request: Request) -> Response:
    """A model's items as CSV, JSON or NDJSON (docs/content-api.md#import-and-export):
    the list the same parameters select, as a download."""
    identity = identify(request)
    content = service(request, ContentService)
    model = content.models.get(request.path_params["model"])
    fmt = request.query_params.get("format", "csv")
    if fmt not in transfer.FORMATS:
        raise BadRequest(f"format must be one of {', '.join(transfer.FORMATS)}", fields=["format"])
    opts = read_options(request)
    states = request.query_params.get("states")
    if states not in (None, "published", "all"):
        raise BadRequest("states must be published (the default) or all", fields=["states"])
    if states == "all":
        identity.require(f"content/{model.name}/update")
        opts = dataclasses.replace(opts, drafts=True)
    chunks = transfer.export_rows(content, model, opts, identity, fmt)
    first = next(chunks, b"")  # the query runs before the status is sent
    headers = {"Content-Disposition": f'attachment; filename="{model.name}.{fmt}"'}
    return ClosingStream(chained(first, chunks), media_type=transfer.FORMATS[fmt], headers=headers)


async def import_items(request: Request) -> Response:
    """Rows of a CSV, JSON or NDJSON file (the body) as items; `preview=1`
    stores nothing and answers the first rows."""
    identity = identify(request)
    quire = quire_of(request)
    content = service(request, ContentService)
    params = request.query_params
    body = await read_body(request, quire.settings.content.import_max_bytes)
    wanted = transfer.Request(body, params.get("format") or transfer.guess_format(body),
                              transfer.check_mapping(json_param(request, "mapping")),
                              params.get("mode", "all"), params.get("preview") in ("1", "true"))
    key = params.get("progress")
    progress = None
    if key is not None:
        if not PROGRESS_KEY.match(key):
            raise BadRequest("progress is a key of letters, digits, - and _ (up to 64)", fields=["progress"])
        progress = transfer.progress_recorder(content.store, key, identity)
    outcome = await transfer.import_rows(content, request.path_params["model"], wanted, identity, progress)
    status = 400 if wanted.mode == "all" and outcome.problems and not wanted.preview else 200
    answer = outcome.to_json()
    if status == 400:
        answer = {"error": f"{outcome.bad_rows} of {outcome.rows} rows are not items of this model: nothing "
                           "was stored (mode=skip stores the others)", **answer}
    return json_response(answer, status)


PROGRESS_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


async def import_progress(request: Request) -> Response:
    """`{done, total}` of an import that was given `progress=<key>`, answered
    to whoever runs it (or an admin)."""
    identity = identify(request)
    key = request.path_params["key"]
    store = service(request, ContentService).store
    answer = transfer.progress_of(store, key, identity) if PROGRESS_KEY.match(key) else None
    if answer is None:
        raise NotFound("No import with that progress key")
    return json_response(answer)


async def get_lock(request: Request) -> Response:
    """Who holds the studio's edit lock of an item (or a singleton), so
    that other tools can respect it: `{"locked": false}`, or `{"locked":
    true, "by", "user", "since"}`. Advice only: saves are guarded by `_rev`."""
    identity = identify(request)
    name = request.path_params["model"]
    service(request, ModelService).get(name)  # 404 for an unknown model
    identity.require(f"content/{name}/read")
    item_id = request.path_params.get("id")
    if item_id is not None and not is_id(item_id):
        raise NotFound("Item not found")
    resource = f"content/{name}" if item_id is None else f"content/{name}/{item_id}"
    lock = service(request, PresenceService).lock_of(resource)
    return json_response({"locked": False} if lock is None else {"locked": True, **lock})


routes = [
    route("/api/content/lock/{model}", get=get_lock),
    route("/api/content/lock/{model}/{id}", get=get_lock),
    route("/api/content/item/{model}", get=get_item, post=save_item),
    route("/api/content/item/{model}/{id}", get=get_item, delete=delete_item),
    route("/api/content/items/{model}", get=list_items),
    route("/api/content/items", get=batch),
    route("/api/content/export/{model}", get=export_items),
    route("/api/content/import/{model}", post=import_items),
    route("/api/content/import-progress/{key}", get=import_progress),
    route("/api/content/tree/{model}", get=get_tree),
    route("/api/content/aggregate/{model}", get=aggregate_items),
    route("/api/content/publish/{model}", post=publish_item),
    route("/api/content/publish/{model}/{id}", post=publish_item),
    route("/api/content/unpublish/{model}", post=unpublish_item),
    route("/api/content/unpublish/{model}/{id}", post=unpublish_item),
    route("/api/content/draft/{model}", delete=discard_draft),
    route("/api/content/draft/{model}/{id}", delete=discard_draft),
    route("/api/content/preview", delete=end_previews),
    route("/api/content/preview/{model}", post=preview_link),
    route("/api/content/preview/{model}/{id}", post=preview_link),
]
