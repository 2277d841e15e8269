"""Personalization parameters of a request: `persona` / `X-Persona-Audience`,
`tz_offset` / `X-Persona-TZ-Offset`, `persona_vars` / `X-Persona-Vars`.
Query parameters win over headers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from quire.errors import BadRequest
from quire.http import json_param, parse_json_text
from quire.persona.resolve import resolve
from quire.persona.schedule import parse_offset


@dataclass
class Persona:
    audience: list[str] | None
    tzoffset: int | None
    variables: dict[str, Any] | None

    def apply(self, data: Any) -> Any:
        return resolve(data, self.audience, tzoffset=self.tzoffset, variables=self.variables)


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
