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

from quire.cache import Cache
from quire.errors import BadRequest
from quire.http import json_param, parse_json_text
from quire.persona.resolve import resolve
from quire.persona.schedule import parse_offset

ROWS_KEPT = 4096  # resolved rows kept per app



class _Kept(NamedTuple):
    """What a list row resolves to for one persona."""

    stored: bytes  # the row as read from the store
    resolved: bytes  # the row as answered to this persona
    minute: int  # the Unix minute it was resolved in; -1: it has no schedule


@dataclass
class Persona:
    audience: list[str] | None
    tzoffset: int | None
    variables: dict[str, Any] | None
    # set by `apply_rows` when a row it resolved has a schedule: the minute
    # its answer holds for
    timed_minute: int | None = None

    def apply(self, data: Any) -> Any:
        return resolve(data, self.audience, tzoffset=self.tzoffset, variables=self.variables)

    def key(self) -> Any:
        """What the resolution of a row depends on, but for the time."""
        return (None if self.audience is None else tuple(sorted(self.audience)), self.tzoffset,
                None if self.variables is None else orjson.dumps(self.variables, option=orjson.OPT_SORT_KEYS))

    def apply_rows(self, rows: list[bytes], cache: Cache, view: Any) -> list[bytes]:
        """Stored list rows resolved: rows without a container (or, with
        variables, a placeholder) go out as stored; the others are resolved
        once per persona (and minute, when they have a schedule) and then
        served from the app's cache. `view` is everything else the stored
        bytes of a row depend on (model, locale, projection, population and
        who reads).

        Resolved rows are kept per persona and row id (`persona.rows`), each
        checked against the stored bytes it was resolved from, which no
        write can make stale, so they outlive the generation: visitors of
        one audience ask for the same items over and over. (A whole page
        asked again is the list route's kept answer, `content.answers`.)
        When a row has a schedule, `timed_minute` says the minute the
        answer holds for."""
        if not rows:
            return rows
        placeholders = self.variables is not None
        minute = int(time.time()) // 60
        persona = (self.key(), view)
        resolved = cache.memo("persona.rows", ROWS_KEPT)
        kept: dict[bytes, _Kept] | None = resolved.get(persona)
        if kept is None:
            kept = {}
            resolved.put(persona, kept)
        out = []
        timed = False
        for row in rows:
            head = row[:40]
            found = kept.get(head)
            if found is not None and found.stored == row and (found.minute < 0 or found.minute == minute):
                timed = timed or found.minute >= 0
                out.append(found.resolved)
                continue
            if b'"persona:variants"' not in row and not (placeholders and b"{{" in row):
                done = row  # nothing to resolve: kept too, so the next look is one comparison
            else:
                now = datetime.fromtimestamp(minute * 60, UTC)
                done = orjson.dumps(resolve(orjson.loads(row), self.audience, tzoffset=self.tzoffset,
                                            variables=self.variables, now=now))
            if found is None:
                resolved.grow(1)
            scheduled = b'"schedule"' in row
            timed = timed or scheduled
            kept[head] = _Kept(row, done, minute if scheduled else -1)
            out.append(done)
        if timed:
            self.timed_minute = minute
        return out


def persona_of(request: Request) -> Persona | None:
    """The request's personalization, or None when it asks for none (the
    stored containers are answered as they are)."""
    raw_query = request.scope.get("query_string", b"")
    # Every content read passes here: the raw query and header names are
    # looked at first, and only what is there is parsed.
    raw_headers = [(name, value) for name, value in request.scope["headers"] if name.startswith(b"x-persona")]
    if b"persona" not in raw_query and b"tz_offset" not in raw_query and not raw_headers:
        return None
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in raw_headers}
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
