"""Personalization parameters of a request: `persona` / `X-Persona-Audience`,
`tz_offset` / `X-Persona-TZ-Offset`, `persona_vars` / `X-Persona-Vars`.
Query parameters win over headers."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import orjson
from starlette.requests import Request

from quire.errors import BadRequest
from quire.http import json_param, parse_json_text
from quire.persona.resolve import resolve
from quire.persona.schedule import parse_offset

ROWS_KEPT = 4096


class _Kept(NamedTuple):
    """One resolved row, as kept."""

    stored: bytes  # the row as read from the store
    resolved: bytes  # the row as answered to this persona
    minute: int  # the Unix minute it was resolved in; -1: it has no schedule
    generation: int  # the store generation it was last seen in


class _RowCache:
    """Resolved list rows, per persona (audience, offset, variables) and
    then per row. Visitors of one audience ask for the same items over and
    over. A row is found by its first bytes (its id). While the store's
    generation is the one the row was resolved in, nothing was written and
    the entry stands; after a write it is compared whole with the stored
    bytes it was resolved from (a memory-bound look, hence the generation),
    so a changed item is resolved again and no row can be served another's
    answer. A row with a schedule is kept with the minute it was resolved
    in (lists evaluate schedules to the minute) and resolved again in a
    later minute, in place. When full, everything is dropped at once
    (cheaper than tracking age per row)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.count = 0
        self.personas: dict[Any, dict[bytes, _Kept]] = {}

    def rows_of(self, persona: Any) -> dict[bytes, _Kept]:
        found = self.personas.get(persona)
        if found is None:
            if len(self.personas) >= 256:  # many personas each with few rows: start afresh
                self.personas.clear()
                self.count = 0
            found = self.personas[persona] = {}
        return found

    def added(self) -> None:
        self.count += 1
        if self.count > self.size:
            self.personas.clear()
            self.count = 0


_rows = _RowCache(ROWS_KEPT)


class _PageMemo:
    """The resolved rows of whole pages, by the ids of their rows: a page
    read again in the same store generation (and minute, when one of its
    rows has a schedule) is answered with the rows resolved last time,
    joined with commas, without a look per row. It is emptied when the
    generation moves on, and when full."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.generation = -1
        self.pages: dict[Any, tuple[int, bytes]] = {}

    def get(self, key: Any, generation: int, minute: int) -> bytes | None:
        if generation != self.generation:
            self.pages.clear()
            self.generation = generation
            return None
        found = self.pages.get(key)
        if found is None or (found[0] >= 0 and found[0] != minute):
            return None
        return found[1]

    def put(self, key: Any, minute: int, rows: bytes) -> None:
        if len(self.pages) >= self.size:
            self.pages.clear()
        self.pages[key] = (minute, rows)


_pages = _PageMemo(ROWS_KEPT)


@dataclass
class Persona:
    audience: list[str] | None
    tzoffset: int | None
    variables: dict[str, Any] | None

    def apply(self, data: Any) -> Any:
        return resolve(data, self.audience, tzoffset=self.tzoffset, variables=self.variables)

    def key(self) -> Any:
        """What the resolution of a row depends on, but for the time."""
        return (None if self.audience is None else tuple(sorted(self.audience)), self.tzoffset,
                None if self.variables is None else orjson.dumps(self.variables, option=orjson.OPT_SORT_KEYS))

    def apply_rows(self, rows: list[bytes], generation: int, view: Any) -> list[bytes]:
        """Stored list rows resolved: rows without a container (or, with
        variables, a placeholder) go out as stored; the others are resolved
        once per persona (and minute, when they have a schedule) and then
        served from memory. The answer is to be joined with commas: a page
        seen before comes back as one element, its rows already joined.
        `generation` is the store's generation the rows
        were read in; `view` is everything else the stored bytes of a row
        depend on (model, locale, projection, population and who reads)."""
        if not rows:
            return rows
        placeholders = self.variables is not None
        minute = int(time.time()) // 60
        persona = (self.key(), view)
        page_key = (persona, b"".join([row[:40] for row in rows]))
        memo = _pages.get(page_key, generation, minute)
        if memo is not None:
            return [memo]  # the page's rows, joined once: one block to copy, not 20 scattered rows
        kept = _rows.rows_of(persona)
        out = []
        timed = False
        for row in rows:
            head = row[:40]
            found = kept.get(head)
            if found is not None and (found.minute < 0 or found.minute == minute):
                timed = timed or found.minute >= 0
                if found.generation == generation:
                    out.append(found.resolved)
                    continue
                if found.stored == row:
                    kept[head] = _Kept(row, found.resolved, found.minute, generation)
                    out.append(found.resolved)
                    continue
            if b'"persona:variants"' not in row and not (placeholders and b"{{" in row):
                done = row  # nothing to resolve: kept too, so the next look is one comparison
            else:
                now = datetime.fromtimestamp(minute * 60, UTC)
                done = orjson.dumps(resolve(orjson.loads(row), self.audience, tzoffset=self.tzoffset,
                                            variables=self.variables, now=now))
            if found is None:
                _rows.added()
            scheduled = b'"schedule"' in row
            timed = timed or scheduled
            kept[head] = _Kept(row, done, minute if scheduled else -1, generation)
            out.append(done)
        _pages.put(page_key, minute if timed else -1, b",".join(out))
        return out


def persona_of(request: Request) -> Persona | None:
    """The request's personalization, or None when it asks for none (the
    stored containers are answered as they are)."""
    raw_query = request.scope.get("query_string", b"")
    # Every content read passes here: the raw query and header names are
    # looked at first, and only what is there is parsed.
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in request.scope["headers"]
               if name.startswith(b"x-persona")}
    if b"persona" not in raw_query and b"tz_offset" not in raw_query and not headers:
        return None
    query = request.query_params
    raw_audience = query.get("persona")
    if raw_audience is None:
        raw_audience = headers.get("x-persona-audience")
    audience = None if raw_audience is None else [t.strip() for t in raw_audience.split(",") if t.strip()]
    variables = json_param(request, "persona_vars") if b"persona_vars" in raw_query else None
    if variables is None and "x-persona-vars" in headers:
        variables = parse_json_text(headers["x-persona-vars"], "X-Persona-Vars")
    if variables is not None and not isinstance(variables, dict):
        raise BadRequest("<persona_vars> must be an object")
    raw_offset = query.get("tz_offset")
    name = "tz_offset"
    if raw_offset is None:
        raw_offset, name = headers.get("x-persona-tz-offset"), "X-Persona-TZ-Offset"
    offset = None
    if raw_offset is not None:
        try:
            offset = parse_offset(raw_offset)
        except ValueError:
            raise BadRequest(f"<{name}> must be minutes east of UTC (like -120) or ±HH:MM (like +02:00)") from None
    if audience is None and variables is None:
        return None
    return Persona(audience, offset, variables)
