"""A content list's query string (`sort`, `q`, `filter`, `page`, `limit`)
turned into what the content service reads (`ReadOptions`), and back into
the links of the list's headers and pages."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from quire.content import types
from quire.content.models import Model
from quire.content.screens import conditions
from quire.content.screens.titles import title_fields
from quire.content.service import ReadOptions
from quire.errors import BadRequest
from quire.http import parse_json_text

LIMITS = (20, 50, 100)
DEFAULT_LIMIT = 20
# a page past this is refused politely: OFFSET walks every row before it
MAX_PAGE = 50_000
SYSTEM_SORTABLE = ("_created", "_modified", "_state")


@dataclass(frozen=True)
class ListQuery:
    """What the list shows: sort (field, 1 or -1), search text, the filter
    as typed, the page (from 1) and its size."""

    sort: str | None = None
    direction: int = 1
    q: str = ""
    filter_text: str = ""
    page: int = 1
    limit: int = DEFAULT_LIMIT
    # the visual filter's rows (field, operator, value), as typed
    conditions: tuple[tuple[str, str, str], ...] = ()
    # the columns a saved view shows (None: the user's own choice)
    columns: tuple[str, ...] | None = None

    @property
    def skip(self) -> int:
        return (self.page - 1) * self.limit

    def params(self, **changes: Any) -> str:
        """The query string of this list with `changes` (`page=2`), only
        the parameters that differ from the defaults."""
        query = replace(self, **changes)
        pairs: list[tuple[str, str]] = []
        if query.sort:
            pairs.append(("sort", ("-" if query.direction < 0 else "") + query.sort))
        if query.q:
            pairs.append(("q", query.q))
        for name, op, value in query.conditions:
            pairs += [("w", name), ("o", op), ("v", value)]
        if query.filter_text:
            pairs.append(("filter", query.filter_text))
        if query.page > 1:
            pairs.append(("page", str(query.page)))
        if query.limit != DEFAULT_LIMIT:
            pairs.append(("limit", str(query.limit)))
        if query.columns is not None:
            pairs.append(("cols", ",".join(query.columns)))
        return "?" + urlencode(pairs) if pairs else ""

    def sort_link(self, field: str) -> str:
        """The link of a column header: sort by it, ascending first, the
        other way round when it is the current sort; back to page 1."""
        direction = -self.direction if self.sort == field else 1
        return self.params(sort=field, direction=direction, page=1)

    def aria_sort(self, field: str) -> str | None:
        if self.sort != field:
            return None
        return "ascending" if self.direction > 0 else "descending"


def sortable_fields(model: Model, drafts: bool) -> list[str]:
    fields = [f["name"] for f in model.fields if f["type"] in types.sortable_types() and not f.get("multiple")]
    return fields + [s for s in SYSTEM_SORTABLE if drafts or s != "_state"]


def parse_query(params: QueryParams, sortable: list[str]) -> ListQuery:
    """The list's parameters; values that make no sense (an unknown sort
    column, page 0, limit 7) fall back to the defaults instead of failing:
    they come from links and bookmarks, not from forms to correct."""
    sort_text = params.get("sort", "")
    direction = -1 if sort_text.startswith("-") else 1
    sort = sort_text.lstrip("-+") or None
    if sort not in sortable:
        sort, direction = None, 1
    page = _int(params.get("page"), 1)
    limit = _int(params.get("limit"), DEFAULT_LIMIT)
    return ListQuery(
        sort=sort, direction=direction,
        q=params.get("q", "").strip()[:200],
        filter_text=params.get("filter", "").strip()[:4000],
        page=min(max(page, 1), MAX_PAGE),
        limit=limit if limit in LIMITS else DEFAULT_LIMIT,
        conditions=tuple((c.field, c.op, c.value) for c in conditions.parse(params)),
        columns=tuple(c for c in params["cols"].split(",")[:50] if c) if params.get("cols") else None,
    )


def _int(text: str | None, default: int) -> int:
    # ASCII only: str.isdigit() also takes '²', which int() refuses
    return int(text) if text and text.isascii() and text.isdigit() and len(text) < 9 else default


def parse_filter_text(text: str) -> dict[str, Any] | None:
    """The filter box's text as the API reads its `filter` parameter (JSON
    or JSON5); 400 with the API's message when it is not an object. Its
    operators are checked when the list is read, also with the API's
    messages."""
    if not text:
        return None
    spec = parse_json_text(text, "filter")
    if not isinstance(spec, dict):
        raise BadRequest("filter must be an object")
    return spec


def text_filter(model: Model, q: str) -> dict[str, Any]:
    """Items whose title-like fields hold `q`, case-insensitive (the search
    box of a model no search index covers)."""
    pattern = re.escape(q)
    names = title_fields(model) or ["_id"]
    return {"$or": [{name: {"$regex": pattern, "$options": "i"}} for name in names]}


def read_options(query: ListQuery, spec: dict[str, Any] | None, drafts: bool,
                 found: dict[str, Any] | None = None) -> ReadOptions:
    """One page with its total: the user's filter and, when searching, the
    search's condition (`found`), both must hold."""
    parts = [p for p in (spec, found) if p]
    combined = None if not parts else parts[0] if len(parts) == 1 else {"$and": parts}
    sort = {query.sort: query.direction} if query.sort else None
    return ReadOptions(filter=combined, sort=sort, limit=query.limit, skip=query.skip, drafts=drafts)
