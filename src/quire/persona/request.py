"""Personalization parameters of a request: `persona` / `X-Persona-Audience`,
`tz_offset` / `X-Persona-TZ-Offset`, `persona_vars` / `X-Persona-Vars`.
Query parameters win over headers."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.requests import Request

from quire.errors import BadRequest
from quire.http import json_param, parse_json_text
from quire.persona.resolve import resolve
from quire.persona.schedule import parse_offset

ROWS_KEPT = 4096


class _RowCache:
    """Resolved list rows, by (stored bytes, persona, minute). Visitors of
    one audience ask for the same items over and over; the stored bytes in
    the key make any change of the item a new entry, and the minute makes
    schedules move on (they are evaluated to the minute for lists). Rows are
    found by a CRC of their bytes and then compared whole, so a lookup costs
    far less than hashing the row and a collision can never serve another
    row's answer. Oldest entries go first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: dict[tuple[int, int, Any], tuple[bytes, bytes]] = {}

    def get(self, row: bytes, persona: Any) -> bytes | None:
        found = self.entries.get((zlib.crc32(row), len(row), persona))
        return found[1] if found is not None and found[0] == row else None

    def put(self, row: bytes, persona: Any, value: bytes) -> None:
        self.entries[(zlib.crc32(row), len(row), persona)] = (row, value)
        if len(self.entries) > self.size:
            del self.entries[next(iter(self.entries))]


_rows = _RowCache(ROWS_KEPT)


@dataclass
class Persona:
    audience: list[str] | None
    tzoffset: int | None
    variables: dict[str, Any] | None

    def apply(self, data: Any) -> Any:
        return resolve(data, self.audience, tzoffset=self.tzoffset, variables=self.variables)

    def apply_rows(self, rows: list[bytes]) -> list[bytes]:
        """Stored list rows resolved: rows without a container (or, with
        variables, a placeholder) go out as stored; the others are resolved
        once per persona and minute and then served from memory."""
        placeholders = self.variables is not None
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        persona = (None if self.audience is None else tuple(sorted(self.audience)), self.tzoffset,
                   None if self.variables is None else orjson.dumps(self.variables, option=orjson.OPT_SORT_KEYS),
                   now)
        out = []
        for row in rows:
            if b'"persona:variants"' not in row and not (placeholders and b"{{" in row):
                out.append(row)
                continue
            done = _rows.get(row, persona)
            if done is None:
                done = orjson.dumps(resolve(orjson.loads(row), self.audience, tzoffset=self.tzoffset,
                                            variables=self.variables, now=now))
                _rows.put(row, persona, done)
            out.append(done)
        return out


def persona_of(request: Request) -> Persona | None:
    """The request's personalization, or None when it asks for none (the
    stored containers are answered as they are)."""
    query, headers = request.query_params, request.headers
    raw_audience = query.get("persona")
    if raw_audience is None:
        raw_audience = headers.get("x-persona-audience")
    audience = None if raw_audience is None else [t.strip() for t in raw_audience.split(",") if t.strip()]
    variables = json_param(request, "persona_vars")
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
