"""When a variant may be shown: `meta.schedule = {start, end, timezone,
days, times}`, every part optional.

- `start`, `end`: ISO 8601 date-times (or dates); without an offset they
  are read in the schedule's time zone.
- `timezone` (or Cockpit's `tz`): an IANA name (`Europe/Berlin`); without
  one the client's offset (`tz_offset`) is used, else UTC. Daylight saving
  time follows the zone's rules.
- `days`: weekdays, as names (`mon`, `Monday`) or ISO numbers (1 Monday ..
  7 Sunday; 0 is Sunday too).
- `times`: `{"start": "HH:MM", "end": "HH:MM"}`, Cockpit's `{"from":
  "HH:MM", "to": "HH:MM"}` or `"HH:MM-HH:MM"`, or a list of them; a
  window whose end is before its start runs overnight, and its early
  hours belong to the day it started (Friday 22:00-02:00 covers Saturday
  01:00).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson

DAYS = {"mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6, "sun": 7}
_HHMM = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_OFFSET = re.compile(r"^([+-]?)(\d{1,2}):?(\d{2})$")  # ±HH:MM, ±HHMM


class ScheduleError(ValueError):
    """A schedule that cannot be read; the message says which part."""


def parse_offset(value: Any) -> int:
    """`tz_offset`: minutes east of UTC as an int (`-120`) or `±HH:MM`."""
    if isinstance(value, str):
        # an unescaped `+` in a query string arrives as a space
        value = "+" + value.strip() if value.startswith(" ") else value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        minutes = value
    elif isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,3}|\d{4}", value):
        minutes = int(value)
    elif isinstance(value, str) and (m := _OFFSET.match(value)):
        sign = -1 if m.group(1) == "-" else 1
        if int(m.group(3)) > 59:
            raise ValueError("minutes over 59")
        minutes = sign * (int(m.group(2)) * 60 + int(m.group(3)))
    else:
        raise ValueError("not an offset")
    if not -14 * 60 <= minutes <= 14 * 60:
        raise ValueError("beyond ±14:00")
    return minutes


def zone_of(schedule: dict[str, Any], tzoffset: int | None) -> tzinfo:
    name = schedule.get("timezone") or schedule.get("tz")
    if name:
        try:
            return ZoneInfo(str(name))
        except (ZoneInfoNotFoundError, ValueError, OSError):
            # OSError: a directory of the zone database ("America") or a name
            # too long for a file name reaches the file system as it is
            raise ScheduleError(f"timezone {str(name)[:60]!r} is not an IANA time zone") from None
    if tzoffset is not None:
        return timezone(timedelta(minutes=tzoffset))
    return UTC


def _moment(value: Any, zone: tzinfo, part: str) -> datetime:
    if not isinstance(value, str):
        raise ScheduleError(f"{part} must be an ISO 8601 date-time")
    try:
        if len(value) == 10:
            moment = datetime.combine(date.fromisoformat(value), time(0), zone)
        else:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ScheduleError(f"{part} must be an ISO 8601 date-time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)


FULL_DAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}


def _day(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 7:
        return value or 7
    if isinstance(value, str) and (value.lower() in DAYS or value.lower() in FULL_DAYS):
        return DAYS[value[:3].lower()]
    raise ScheduleError(f"days: {value!r} is not a weekday")


def _days(schedule: dict[str, Any]) -> set[int]:
    days = schedule.get("days")
    if days is None:
        return set()
    if not isinstance(days, list):
        raise ScheduleError("days must be a list of weekdays")
    return {_day(d) for d in days}


def _minutes(value: Any, part: str) -> int:
    m = _HHMM.match(value) if isinstance(value, str) else None
    if m is None:
        raise ScheduleError(f"{part} must be HH:MM")
    return int(m.group(1)) * 60 + int(m.group(2))


_TIMES_FORMS = "times must be {start: HH:MM, end: HH:MM}, {from: HH:MM, to: HH:MM}, \"HH:MM-HH:MM\" or a list of them"


def _window(item: Any) -> tuple[int, int]:
    if isinstance(item, str):
        start, sep, end = item.partition("-")
        if not sep:
            raise ScheduleError(_TIMES_FORMS)
        return _minutes(start.strip(), "times"), _minutes(end.strip(), "times")
    if not isinstance(item, dict):
        raise ScheduleError(_TIMES_FORMS)
    if "from" in item or "to" in item:  # Cockpit's form
        return _minutes(item.get("from"), "times.from"), _minutes(item.get("to"), "times.to")
    return _minutes(item.get("start"), "times.start"), _minutes(item.get("end"), "times.end")


def _windows(times: Any) -> list[tuple[int, int]]:
    return [_window(item) for item in (times if isinstance(times, list) else [times])]


def check(schedule: Any) -> None:
    """Raise ScheduleError for a schedule that cannot be read (at write time)."""
    if not isinstance(schedule, dict):
        raise ScheduleError("schedule must be an object")
    zone = zone_of(schedule, None)
    for part in ("start", "end"):
        if schedule.get(part) is not None:
            _moment(schedule[part], zone, part)
    _days(schedule)
    if schedule.get("times") is not None:
        _windows(schedule["times"])


@dataclass(frozen=True)
class Parsed:
    zone: tzinfo
    start: datetime | None
    end: datetime | None
    days: frozenset[int]
    windows: tuple[tuple[int, int], ...] | None


@functools.lru_cache(maxsize=1024)
def _parsed(key: str, tzoffset: int | None) -> Parsed:
    """A schedule read once: lists of items share a few schedules, and a
    request may ask about each of them once per item."""
    schedule = orjson.loads(key)
    zone = zone_of(schedule, tzoffset)
    return Parsed(
        zone,
        _moment(schedule["start"], zone, "start") if schedule.get("start") is not None else None,
        _moment(schedule["end"], zone, "end") if schedule.get("end") is not None else None,
        frozenset(_days(schedule)),
        tuple(_windows(schedule["times"])) if schedule.get("times") is not None else None,
    )


def is_open(schedule: Any, now: datetime, tzoffset: int | None) -> bool:
    """Whether `now` (aware) falls inside the schedule."""
    if not schedule:
        return True
    if not isinstance(schedule, dict):
        raise ScheduleError("schedule must be an object")
    try:
        parsed = _parsed(orjson.dumps(schedule, option=orjson.OPT_SORT_KEYS).decode(), tzoffset)
    except orjson.JSONEncodeError:
        raise ScheduleError("schedule is not JSON") from None
    if parsed.start is not None and now < parsed.start:
        return False
    if parsed.end is not None and now >= parsed.end:
        return False
    local = now.astimezone(parsed.zone)
    days = parsed.days
    minute = local.hour * 60 + local.minute
    if parsed.windows is None:
        return not days or local.isoweekday() in days
    for start, end in parsed.windows:
        if start <= end:
            inside, weekday = start <= minute < end, local.isoweekday()
        elif minute >= start:  # overnight window, evening part
            inside, weekday = True, local.isoweekday()
        else:  # overnight window, after midnight: it started the day before
            inside, weekday = minute < end, (local - timedelta(days=1)).isoweekday()
        if inside and (not days or weekday in days):
            return True
    return False
