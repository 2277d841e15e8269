"""Unit tests of `quire.persona.resolve`: variant choice, schedules and
variables, with fixed `now` values."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from quire.persona import resolve
from quire.persona import schedule as schedule_module

KEY = "persona:variants"
# 2026-11-20 is a Friday, 2026-11-21 a Saturday, 2026-11-22 a Sunday.
FRI_NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def box(*variants: dict[str, Any]) -> dict[str, Any]:
    return {KEY: list(variants)}


def var(name: str, *audience: str, schedule: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": name, "audience": list(audience), "data": {"v": name}, **extra}
    if schedule is not None:
        out["meta"] = {"schedule": schedule}
    return out


def pick(container: dict[str, Any], audience: list[str] | None, **kw: Any) -> Any:
    """The `v` of the variant chosen for the field `f`, or None."""
    kw.setdefault("now", FRI_NOON)
    out = resolve({"f": container}, audience, **kw)["f"]
    return None if out is None else out["v"]


# --- choice ---------------------------------------------------------------

def test_highest_jaccard_score_wins() -> None:
    # audience {a, b}: A {a} -> 1/2, B {a, b, c} -> 2/3, C {b} -> 1/2
    container = box(var("A", "a"), var("B", "a", "b", "c"), var("C", "b"))
    assert pick(container, ["a", "b"]) == "B"


def test_exact_match_beats_superset_and_guest() -> None:
    container = box(var("G"), var("S", "a", "b"), var("E", "a"))
    assert pick(container, ["a"]) == "E"


def test_jaccard_not_plain_overlap_count() -> None:
    # overlap count would tie (1 each) and pick the first; Jaccard picks the smaller set
    container = box(var("big", "a", "x", "y", "z"), var("small", "a", "q"))
    assert pick(container, ["a"]) == "small"


def test_tie_goes_to_earlier_variant() -> None:
    x, y = var("X", "a", "b"), var("Y", "a", "c")
    assert pick(box(x, y), ["a"]) == "X"
    assert pick(box(y, x), ["a"]) == "Y"


def test_no_positive_score_falls_back_to_first_guest_variant() -> None:
    container = box(var("A", "a"), var("G1"), var("G2"))
    assert pick(container, ["zzz"]) == "G1"


def test_no_positive_score_and_no_guest_falls_back_to_first_eligible() -> None:
    container = box(var("A", "a", active=False), var("B", "b"), var("C", "c"))
    assert pick(container, ["zzz"]) == "B"


def test_none_eligible_gives_null() -> None:
    container = box(var("A", "a", active=False), var("G", active=False))
    assert resolve({"f": container, "keep": 1}, ["a"], now=FRI_NOON) == {"f": None, "keep": 1}


def test_empty_variant_list_gives_null() -> None:
    assert resolve({"f": box()}, ["a"], now=FRI_NOON) == {"f": None}


def test_inactive_best_match_is_dropped() -> None:
    container = box(var("A", "a", active=False), var("B", "a", "b"))
    assert pick(container, ["a"]) == "B"


def test_empty_audience_resolves_like_a_guest() -> None:
    container = box(var("A", "a"), var("G"))
    assert pick(container, []) == "G"
    assert pick(container, ["", "  "]) == "G"


def test_audience_tags_are_trimmed() -> None:
    container = box(var("G"), var("A", "a"))
    assert pick(container, [" a "]) == "A"


def test_no_audience_keeps_containers_unchanged() -> None:
    data = {"f": box(var("A", "a"), var("G")), "t": "{{ x }}"}
    assert resolve(data, None, now=FRI_NOON) == data


def test_container_replaced_by_variant_data_not_variant() -> None:
    container = box({"id": "1", "audience": ["a"], "label": "L", "data": {"title": "T", "n": 2}})
    assert resolve({"f": container}, ["a"], now=FRI_NOON) == {"f": {"title": "T", "n": 2}}


def test_containers_in_lists_and_nested_in_variant_data_are_resolved() -> None:
    inner = box(var("innerA", "a"), var("innerG"))
    outer = box({"id": "o", "audience": ["a"], "data": {"child": inner}})
    data = {"list": [box(var("A", "a")), {"deep": {"deeper": box(var("G"), var("A", "a"))}}], "outer": outer}
    out = resolve(data, ["a"], now=FRI_NOON)
    assert out == {"list": [{"v": "A"}, {"deep": {"deeper": {"v": "A"}}}], "outer": {"child": {"v": "innerA"}}}


def test_resolve_does_not_change_its_input() -> None:
    data = {"f": box(var("A", "a"), var("G")), "s": "Hi {{ name }}", "l": [box(var("G"))]}
    before = copy.deepcopy(data)
    resolve(data, ["a"], variables={"name": "Ann"}, now=FRI_NOON)
    assert data == before


def test_documented_helper_example() -> None:
    # api.md rule 5: data, an audience array, and tzoffset / variables
    data = {
        "hero": box(
            {"id": "1", "active": True, "label": "Guests", "audience": [], "data": {"title": "Hello {{ name:guest }}"}},
            {"id": "2", "active": True, "label": "Members", "audience": ["member"],
             "data": {"title": "Welcome back {{ name }} from {{ user.city }}"}},
        )
    }
    out = resolve(data, ["member"], tzoffset=120, variables={"name": "Ann", "user": {"city": "Berlin"}})
    assert out == {"hero": {"title": "Welcome back Ann from Berlin"}}
    assert resolve(data, [], variables={}) == {"hero": {"title": "Hello guest"}}


# --- schedules ------------------------------------------------------------

NINE_TO_TEN = {"times": {"start": "09:00", "end": "10:00"}}


def scheduled(schedule: dict[str, Any]) -> dict[str, Any]:
    """A container whose only audience variant is scheduled; the guest is the fallback."""
    return box(var("S", "a", schedule=schedule), var("G"))


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (datetime(2026, 1, 15, 8, 30, tzinfo=UTC), "S"),   # 09:30 CET (UTC+1)
        (datetime(2026, 1, 15, 7, 30, tzinfo=UTC), "G"),   # 08:30 CET
        (datetime(2026, 1, 15, 9, 0, tzinfo=UTC), "G"),    # 10:00 CET: end is exclusive
        (datetime(2026, 7, 15, 7, 30, tzinfo=UTC), "S"),   # 09:30 CEST (UTC+2)
        (datetime(2026, 7, 15, 8, 30, tzinfo=UTC), "G"),   # 10:30 CEST
        (datetime(2026, 7, 15, 7, 0, tzinfo=UTC), "S"),    # 09:00 CEST: start is inclusive
    ],
)
def test_times_follow_the_zone_in_winter_and_summer(now: datetime, expected: str) -> None:
    schedule = {"timezone": "Europe/Berlin", **NINE_TO_TEN}
    assert pick(scheduled(schedule), ["a"], now=now) == expected


def test_schedule_timezone_wins_over_client_offset() -> None:
    now = datetime(2026, 1, 15, 8, 30, tzinfo=UTC)  # 09:30 Berlin, 06:30 at -02:00
    schedule = {"timezone": "Europe/Berlin", **NINE_TO_TEN}
    assert pick(scheduled(schedule), ["a"], now=now, tzoffset=-120) == "S"


def test_client_offset_used_without_schedule_timezone() -> None:
    now = datetime(2026, 1, 15, 11, 30, tzinfo=UTC)
    assert pick(scheduled(NINE_TO_TEN), ["a"], now=now, tzoffset=-120) == "S"   # 09:30 local
    assert pick(scheduled(NINE_TO_TEN), ["a"], now=now, tzoffset=120) == "G"    # 13:30 local
    assert pick(scheduled(NINE_TO_TEN), ["a"], now=now) == "G"                  # 11:30 UTC


def test_utc_without_timezone_or_offset() -> None:
    assert pick(scheduled(NINE_TO_TEN), ["a"], now=datetime(2026, 1, 15, 9, 30, tzinfo=UTC)) == "S"


def test_naive_now_is_read_as_utc() -> None:
    assert pick(scheduled(NINE_TO_TEN), ["a"], now=datetime(2026, 1, 15, 9, 30)) == "S"
    assert pick(scheduled(NINE_TO_TEN), ["a"], now=datetime(2026, 1, 15, 10, 30)) == "G"


def test_start_without_offset_is_read_in_zone_across_dst_change() -> None:
    # Berlin switches to CEST on 2026-03-29 at 02:00 local; 03:30 CEST is 01:30 UTC
    schedule = {"timezone": "Europe/Berlin", "start": "2026-03-29T03:30:00"}
    assert pick(scheduled(schedule), ["a"], now=datetime(2026, 3, 29, 1, 20, tzinfo=UTC)) == "G"
    assert pick(scheduled(schedule), ["a"], now=datetime(2026, 3, 29, 1, 30, tzinfo=UTC)) == "S"


def test_start_inclusive_end_exclusive() -> None:
    schedule = {"start": "2026-11-20T10:00:00Z", "end": "2026-11-20T12:00:00Z"}
    at = lambda h, m=0: pick(scheduled(schedule), ["a"], now=datetime(2026, 11, 20, h, m, tzinfo=UTC))  # noqa: E731
    assert [at(9, 59), at(10), at(11, 59), at(12)] == ["G", "S", "S", "G"]


def test_start_with_explicit_offset_and_date_only_end() -> None:
    schedule = {"timezone": "Europe/Berlin", "start": "2026-11-20T10:00:00+00:00", "end": "2026-11-21"}
    # end 2026-11-21 is midnight Berlin = 2026-11-20 23:00 UTC
    assert pick(scheduled(schedule), ["a"], now=datetime(2026, 11, 20, 9, 0, tzinfo=UTC)) == "G"
    assert pick(scheduled(schedule), ["a"], now=datetime(2026, 11, 20, 22, 59, tzinfo=UTC)) == "S"
    assert pick(scheduled(schedule), ["a"], now=datetime(2026, 11, 20, 23, 0, tzinfo=UTC)) == "G"


def test_end_in_client_offset_without_timezone() -> None:
    schedule = {"end": "2026-11-20T12:00:00"}
    now = datetime(2026, 11, 20, 11, 0, tzinfo=UTC)
    assert pick(scheduled(schedule), ["a"], now=now) == "S"                  # end 12:00 UTC
    assert pick(scheduled(schedule), ["a"], now=now, tzoffset=120) == "G"    # end 10:00 UTC


@pytest.mark.parametrize("days", [["fri"], ["Friday"], ["FRI"], [5], ["mon", 5]])
def test_days_as_names_and_iso_numbers(days: list[Any]) -> None:
    assert pick(scheduled({"days": days}), ["a"]) == "S"                     # Friday
    sat = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert pick(scheduled({"days": days}), ["a"], now=sat) == "G"


@pytest.mark.parametrize("sunday", [7, 0, "sun", "Sunday"])
def test_sunday_is_7_or_0(sunday: Any) -> None:
    sun = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    assert pick(scheduled({"days": [sunday]}), ["a"], now=sun) == "S"
    assert pick(scheduled({"days": [sunday]}), ["a"]) == "G"


def test_days_are_evaluated_in_local_time() -> None:
    late_sat = datetime(2026, 11, 21, 23, 30, tzinfo=UTC)  # Sunday 01:30 at +02:00
    assert pick(scheduled({"days": ["sun"]}), ["a"], now=late_sat, tzoffset=120) == "S"
    assert pick(scheduled({"days": ["sun"]}), ["a"], now=late_sat) == "G"


OVERNIGHT = {"days": ["fri"], "times": {"start": "22:00", "end": "02:00"}}


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (datetime(2026, 11, 20, 21, 59, tzinfo=UTC), "G"),  # Friday before the window
        (datetime(2026, 11, 20, 23, 0, tzinfo=UTC), "S"),   # Friday 23:00
        (datetime(2026, 11, 21, 1, 0, tzinfo=UTC), "S"),    # Saturday 01:00 belongs to Friday
        (datetime(2026, 11, 21, 2, 0, tzinfo=UTC), "G"),    # Saturday 02:00: end exclusive
        (datetime(2026, 11, 21, 23, 0, tzinfo=UTC), "G"),   # Saturday 23:00: Saturday's window
        (datetime(2026, 11, 20, 1, 0, tzinfo=UTC), "G"),    # Friday 01:00 belongs to Thursday
    ],
)
def test_overnight_window_belongs_to_the_day_it_starts(now: datetime, expected: str) -> None:
    assert pick(scheduled(OVERNIGHT), ["a"], now=now) == expected


def test_several_time_windows() -> None:
    schedule = {"times": [{"start": "08:00", "end": "09:00"}, {"start": "17:00", "end": "18:00"}]}
    at = lambda h: pick(scheduled(schedule), ["a"], now=datetime(2026, 11, 20, h, 30, tzinfo=UTC))  # noqa: E731
    assert [at(8), at(12), at(17)] == ["S", "G", "S"]


def test_scheduled_out_best_match_falls_back_to_next_best() -> None:
    container = box(var("S", "a", schedule={"end": "2020-01-01"}), var("B", "a", "b"), var("G"))
    assert pick(container, ["a"]) == "B"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "America", "UTC" * 1000])
def test_unknown_timezone_never_opens(zone: str) -> None:
    assert pick(scheduled({"timezone": zone}), ["a"]) == "G"


@pytest.mark.parametrize(
    "schedule",
    [
        {"times": {"start": "25:00", "end": "26:00"}},
        {"start": "yesterday"},
        {"days": ["someday"]},
    ],
)
def test_unreadable_schedule_never_opens(schedule: dict[str, Any]) -> None:
    assert pick(scheduled(schedule), ["a"]) == "G"


@pytest.mark.parametrize("schedule", [{"days": 5}, "always"])
def test_wrongly_shaped_schedule_never_opens(schedule: Any) -> None:
    container = box({"id": "S", "audience": ["a"], "data": {"v": "S"}, "meta": {"schedule": schedule}}, var("G"))
    assert pick(container, ["a"]) == "G"


# --- variables ------------------------------------------------------------

def sub(text: str, variables: dict[str, Any], audience: list[str] | None = None) -> Any:
    return resolve({"t": text}, audience, variables=variables, now=FRI_NOON)["t"]


@pytest.mark.parametrize("text", ["Hi {{ name }}!", "Hi {{name}}!", "Hi {{   name  }}!"])
def test_simple_variable_with_optional_spaces(text: str) -> None:
    assert sub(text, {"name": "Ann"}) == "Hi Ann!"


def test_nested_path() -> None:
    assert sub("{{ user.address.city }}/{{ user.name }}", {"user": {"name": "Ann", "address": {"city": "Rome"}}}) \
        == "Rome/Ann"


def test_default_used_when_missing_and_ignored_when_present() -> None:
    assert sub("Hi {{ name:Guest }}", {}) == "Hi Guest"
    assert sub("Hi {{name:Guest}}", {"name": "Ann"}) == "Hi Ann"
    assert sub("{{ user.city:Nowhere }}", {"user": {}}) == "Nowhere"


def test_null_value_uses_default() -> None:
    assert sub("{{ name:Guest }}|{{ name }}|", {"name": None}) == "Guest||"


def test_unknown_variable_without_default_is_empty() -> None:
    assert sub("a{{ nope }}b{{ user.city }}c", {"user": "flat"}) == "abc"


def test_values_are_html_escaped() -> None:
    assert sub("{{ x }}", {"x": '<script>alert("&")</script>'}) == "&lt;script&gt;alert(&quot;&amp;&quot;)&lt;/script&gt;"


def test_non_string_values_are_rendered() -> None:
    assert sub("{{ n }} {{ b }} {{ f }}", {"n": 5, "b": True, "f": False}) == "5 true false"


def test_variables_only_in_string_values_not_keys() -> None:
    data = {"{{ k }}": 3, "n": 7, "l": ["{{ k }}", 1]}
    assert resolve(data, None, variables={"k": "K"}) == {"{{ k }}": 3, "n": 7, "l": ["K", 1]}


def test_variables_applied_without_audience_inside_raw_containers() -> None:
    data = {"f": box({"id": "1", "audience": [], "data": {"t": "Hi {{ name }}"}})}
    out = resolve(data, None, variables={"name": "Ann"})
    assert out == {"f": box({"id": "1", "audience": [], "data": {"t": "Hi Ann"}})}


def test_variables_applied_with_audience_in_chosen_variant() -> None:
    data = {"f": box(var("G"), {"id": "A", "audience": ["a"], "data": {"t": "Hi {{ name }}"}})}
    assert resolve(data, ["a"], variables={"name": "Ann"}) == {"f": {"t": "Hi Ann"}}


def test_no_variables_leaves_placeholders() -> None:
    assert resolve({"t": "Hi {{ name }}"}, ["a"]) == {"t": "Hi {{ name }}"}


@pytest.mark.parametrize(
    "times",
    [
        "09:00-10:00",
        " 09:00 - 10:00 ",
        {"from": "09:00", "to": "10:00"},
        ["07:00-08:00", {"from": "09:00", "to": "10:00"}],
    ],
)
def test_cockpit_forms_of_times(times: Any) -> None:
    at = lambda h, m: pick(scheduled({"times": times}), ["a"], now=datetime(2026, 11, 20, h, m, tzinfo=UTC))  # noqa: E731
    assert [at(8, 59), at(9, 0), at(9, 59), at(10, 0)] == ["G", "S", "S", "G"]


def test_cockpit_overnight_times_string() -> None:
    schedule = {"days": ["fri"], "times": "22:00-02:00"}
    assert pick(scheduled(schedule), ["a"], now=datetime(2026, 11, 21, 1, 0, tzinfo=UTC)) == "S"


def test_tz_is_an_alias_of_timezone() -> None:
    now = datetime(2026, 1, 15, 8, 30, tzinfo=UTC)  # 09:30 in Berlin (CET)
    assert pick(scheduled({"tz": "Europe/Berlin", **NINE_TO_TEN}), ["a"], now=now) == "S"
    assert pick(scheduled(NINE_TO_TEN), ["a"], now=now) == "G"
    # both given: `timezone` wins
    both = {"timezone": "Europe/Berlin", "tz": "America/New_York", **NINE_TO_TEN}
    assert pick(scheduled(both), ["a"], now=now) == "S"


@pytest.mark.parametrize(
    "schedule",
    [{"times": "09:00"}, {"times": "9-10"}, {"times": {"from": "09:00"}}, {"times": "25:00-26:00"},
     {"tz": "Mars/Olympus"}],
)
def test_unreadable_cockpit_forms_are_refused(schedule: dict[str, Any]) -> None:
    with pytest.raises(schedule_module.ScheduleError):
        schedule_module.check(schedule)
