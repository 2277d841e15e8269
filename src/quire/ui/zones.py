"""The time zone a user of the studio reads and types times in: the one
chosen on their settings page, else the browser's (admin.js keeps it in a
cookie), else UTC. Times are stored as UTC (unix seconds) whatever zone
shows them; every time shown names its zone."""

from __future__ import annotations

import datetime as dt
import functools
import zoneinfo
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request

from quire.http import service
from quire.ui.prefs import PrefsService

PREF_KEY = "timezone"
COOKIE = "quire_tz"  # the browser's zone (IANA name), written by admin.js
MINUTE_FORMAT = "%Y-%m-%dT%H:%M"  # a datetime-local input's value


@functools.cache
def zone_names() -> tuple[str, ...]:
    """Every IANA zone this machine knows, sorted (the settings' menu)."""
    return tuple(sorted(zoneinfo.available_timezones()))


def known(name: Any) -> bool:
    return isinstance(name, str) and name in _zone_set()


@functools.cache
def _zone_set() -> frozenset[str]:
    return frozenset(zone_names()) | {"UTC"}


def chosen(request: Request, user_id: str) -> str | None:
    """The zone the user chose on their settings page (None: the browser's)."""
    value = service(request, PrefsService).get(user_id, PREF_KEY)
    return value if known(value) else None


def zone_name(request: Request, user_id: str) -> str:
    return chosen(request, user_id) or browser_zone(request) or "UTC"


def browser_zone(request: Request) -> str | None:
    value = unquote(request.cookies.get(COOKIE) or "")  # admin.js writes it URL-encoded (Europe%2FBerlin)
    return value if known(value) else None


def to_input(seconds: Any, zone: str) -> str:
    """Unix seconds as a datetime-local input's value in `zone` ("" for none)."""
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        return ""
    return dt.datetime.fromtimestamp(seconds, zoneinfo.ZoneInfo(zone)).strftime(MINUTE_FORMAT)


def from_input(text: str, zone: str) -> int:
    """A datetime-local input's value, read in `zone`, as unix seconds
    (ValueError when it is not one). A time that the zone skips (the hour
    clocks go forward) is read as the same wall time before the change, a
    time it has twice (the hour clocks go back) as the first of them."""
    when = dt.datetime.strptime(text.strip()[:16], MINUTE_FORMAT)
    return int(when.replace(tzinfo=zoneinfo.ZoneInfo(zone)).timestamp())


def day_bounds(text: str, zone: str) -> tuple[int, int]:
    """The first and the last second of a day (YYYY-MM-DD) in `zone`."""
    day = dt.date.fromisoformat(text.strip())
    start = dt.datetime.combine(day, dt.time(), zoneinfo.ZoneInfo(zone))
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), zoneinfo.ZoneInfo(zone))
    return int(start.timestamp()), int(end.timestamp()) - 1


def label(zone: str, seconds: int | None = None) -> str:
    """The zone as a person reads it next to a time: its name and its
    offset from UTC now (or at `seconds`), e.g. "Europe/Berlin, UTC+01:00"."""
    if zone == "UTC":
        return "UTC"
    at = dt.datetime.fromtimestamp(seconds if seconds is not None else dt.datetime.now(dt.UTC).timestamp(),
                                   zoneinfo.ZoneInfo(zone))
    offset = at.strftime("%z")
    return f"{zone}, UTC{offset[:3]}:{offset[3:]}"
