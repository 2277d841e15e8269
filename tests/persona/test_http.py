"""Personalization applied over HTTP: request parameters and headers, every
content and page GET, write validation of the `variants` field type."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Api, create_item, put_model, role_key

KEY = "persona:variants"


def hero(guest: str = "guest", member: str = "member") -> dict[str, Any]:
    return {KEY: [
        {"id": "g", "audience": [], "data": {"title": guest}},
        {"id": "m", "audience": ["member"], "data": {"title": member}},
        {"id": "v", "audience": ["vip", "member"], "data": {"title": "vip"}},
    ]}


FIELDS = [
    {"name": "title", "type": "text"},
    {"name": "hero", "type": "variants"},
    {"name": "extra", "type": "object"},
    {"name": "block", "type": "set", "opts": {"fields": [{"name": "inner", "type": "variants"},
                                                          {"name": "text", "type": "text"}]}},
]


@pytest.fixture
def posts(admin: Api) -> dict[str, Any]:
    put_model(admin, "posts", type="collection", fields=FIELDS)
    return create_item(admin, "posts", {
        "title": "Hi {{ name:you }}",
        "hero": hero(),
        "extra": {"nested": hero("xg", "xm")},
        "block": {"inner": hero("bg", "bm"), "text": "{{ user.city }}"},
    })


def get(api: Api, url: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Any:
    response = api.get(url, params=params or {}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def titles(item: dict[str, Any]) -> tuple[Any, ...]:
    return (item["hero"]["title"], item["extra"]["nested"]["title"], item["block"]["inner"]["title"])


# --- request parameters ---------------------------------------------------

def test_no_persona_params_returns_raw_containers(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}")
    assert body["hero"] == posts["hero"]
    assert body["hero"][KEY][1]["data"] == {"title": "member"}
    assert body["title"] == "Hi {{ name:you }}"


def test_persona_query_resolves_containers_everywhere(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}", {"persona": "member"})
    assert titles(body) == ("member", "xm", "bm")
    assert body["title"] == "Hi {{ name:you }}"  # no variables: placeholders kept


def test_comma_separated_audience(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}", {"persona": "vip, member"})
    assert body["hero"] == {"title": "vip"}


def test_empty_persona_param_resolves_like_a_guest(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}", {"persona": ""})
    assert titles(body) == ("guest", "xg", "bg")


def test_audience_header(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}", headers={"X-Persona-Audience": "member"})
    assert body["hero"] == {"title": "member"}


def test_query_audience_wins_over_header(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}", {"persona": "nobody"},
               headers={"X-Persona-Audience": "member"})
    assert body["hero"] == {"title": "guest"}


def test_vars_bracket_form(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}",
               {"persona_vars[name]": "<Ann>", "persona_vars[user][city]": "Rome"})
    assert body["title"] == "Hi &lt;Ann&gt;"
    assert body["block"]["text"] == "Rome"
    assert KEY in body["hero"]  # variables alone do not resolve containers


def test_vars_json_form_nested(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}",
               {"persona": "member", "persona_vars": json.dumps({"name": "Ann", "user": {"city": "Rome"}})})
    assert body["title"] == "Hi Ann"
    assert body["block"]["text"] == "Rome"
    assert body["hero"] == {"title": "member"}


def test_vars_header(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}",
               headers={"X-Persona-Vars": json.dumps({"user": {"city": "Oslo"}})})
    assert body["title"] == "Hi you"
    assert body["block"]["text"] == "Oslo"


def test_query_vars_win_over_header(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}", {"persona_vars[name]": "Query"},
               headers={"X-Persona-Vars": json.dumps({"name": "Header", "user": {"city": "Oslo"}})})
    assert body["title"] == "Hi Query"
    assert body["block"]["text"] == ""  # the header is not merged in


@pytest.mark.parametrize(("params", "headers", "name"), [
    ({"persona_vars": "{not json"}, {}, "persona_vars"),
    ({"persona_vars": "[1, 2]"}, {}, "persona_vars"),
    ({}, {"X-Persona-Vars": "{broken"}, "X-Persona-Vars"),
])
def test_bad_vars_is_400(admin: Api, posts: dict[str, Any], params: Any, headers: Any, name: str) -> None:
    response = admin.get(f"/api/content/item/posts/{posts['_id']}", params=params, headers=headers)
    assert response.status_code == 400, response.text
    assert name in response.json()["error"]


@pytest.mark.parametrize("value", ["abc", "+25:00", "900", "+02:75", "2h"])
def test_malformed_tz_offset_is_400_naming_the_parameter(admin: Api, posts: dict[str, Any], value: str) -> None:
    response = admin.get(f"/api/content/item/posts/{posts['_id']}", params={"persona": "member", "tz_offset": value})
    assert response.status_code == 400, response.text
    assert "tz_offset" in response.json()["error"]


def test_malformed_tz_offset_header_is_400_naming_the_header(admin: Api, posts: dict[str, Any]) -> None:
    response = admin.get(f"/api/content/item/posts/{posts['_id']}", params={"persona": "member"},
                         headers={"X-Persona-TZ-Offset": "soon"})
    assert response.status_code == 400, response.text
    assert "X-Persona-TZ-Offset" in response.json()["error"]


# A variant open only while local time is within an hour-long window that
# contains the current time at +02:00 but not at -02:00 (or vice versa),
# built from the real clock since requests use the current time.

def _windowed(admin: Api) -> str:
    from datetime import UTC, datetime, timedelta

    local = datetime.now(UTC) + timedelta(minutes=120)
    start = (local - timedelta(minutes=30)).strftime("%H:%M")
    end = (local + timedelta(minutes=30)).strftime("%H:%M")
    put_model(admin, "timed", type="collection", fields=[{"name": "hero", "type": "variants"}])
    item = create_item(admin, "timed", {"hero": {KEY: [
        {"id": "s", "audience": ["a"], "data": {"t": "open"}, "meta": {"schedule": {"times": {"start": start, "end": end}}}},
        {"id": "g", "audience": [], "data": {"t": "closed"}},
    ]}})
    return f"/api/content/item/timed/{item['_id']}"


@pytest.mark.parametrize("offset", ["120", "+02:00", "+2:00", "+120"])
def test_tz_offset_query_forms(admin: Api, offset: str) -> None:
    url = _windowed(admin)
    assert get(admin, url, {"persona": "a", "tz_offset": offset})["hero"] == {"t": "open"}
    assert get(admin, url, {"persona": "a", "tz_offset": "-02:00"})["hero"] == {"t": "closed"}
    assert get(admin, url, {"persona": "a", "tz_offset": "-120"})["hero"] == {"t": "closed"}


def test_tz_offset_header_and_query_precedence(admin: Api) -> None:
    url = _windowed(admin)
    assert get(admin, url, {"persona": "a"}, headers={"X-Persona-TZ-Offset": "+02:00"})["hero"] == {"t": "open"}
    assert get(admin, url, {"persona": "a", "tz_offset": "-120"},
               headers={"X-Persona-TZ-Offset": "+02:00"})["hero"] == {"t": "closed"}


# --- every GET endpoint ---------------------------------------------------

def test_items_list_with_and_without_envelope(admin: Api, posts: dict[str, Any]) -> None:
    create_item(admin, "posts", {"title": "second", "hero": hero("g2", "m2")})
    rows = get(admin, "/api/content/items/posts", {"persona": "member"})
    assert [r["hero"]["title"] for r in rows] == ["member", "m2"]
    limited = get(admin, "/api/content/items/posts", {"persona": "member", "limit": 1})
    assert [r["hero"]["title"] for r in limited] == ["member"]
    env = get(admin, "/api/content/items/posts", {"persona": "", "limit": 5, "skip": 1})
    assert env["meta"] == {"total": 2}
    assert [r["hero"]["title"] for r in env["data"]] == ["g2"]
    raw = get(admin, "/api/content/items/posts")
    assert KEY in raw[0]["hero"]


def test_items_list_variables(admin: Api, posts: dict[str, Any]) -> None:
    rows = get(admin, "/api/content/items/posts", {"persona_vars[name]": "Ann", "limit": 5, "skip": 0})
    assert rows["data"][0]["title"] == "Hi Ann"


def test_item_with_projection_is_personalized(admin: Api, posts: dict[str, Any]) -> None:
    body = get(admin, f"/api/content/item/posts/{posts['_id']}",
               {"persona": "member", "fields": json.dumps({"hero": 1})})
    assert body["hero"] == {"title": "member"}
    assert "title" not in body


def test_singleton_item(admin: Api) -> None:
    put_model(admin, "home", type="singleton", fields=FIELDS)
    admin.post("/api/content/item/home", json={"data": {"title": "{{ name }}", "hero": hero()}})
    body = get(admin, "/api/content/item/home", {"persona": "member", "persona_vars[name]": "Ann"})
    assert body["hero"] == {"title": "member"}
    assert body["title"] == "Ann"
    assert KEY in get(admin, "/api/content/item/home")["hero"]


def test_tree(admin: Api) -> None:
    put_model(admin, "menu", type="tree", fields=FIELDS)
    parent = create_item(admin, "menu", {"title": "p", "hero": hero("pg", "pm")})
    create_item(admin, "menu", {"title": "c", "hero": hero("cg", "cm"), "_pid": parent["_id"]})
    tree = get(admin, "/api/content/tree/menu", {"persona": "member"})
    assert tree[0]["hero"] == {"title": "pm"}
    assert tree[0]["_children"][0]["hero"] == {"title": "cm"}
    raw = get(admin, "/api/content/tree/menu")
    assert KEY in raw[0]["_children"][0]["hero"]


def test_batch(admin: Api, posts: dict[str, Any]) -> None:
    put_model(admin, "home", type="singleton", fields=FIELDS)
    admin.post("/api/content/item/home", json={"data": {"hero": hero("hg", "hm")}})
    models = json.dumps({"posts": {}, "home": {}, "paged": {"model": "posts", "limit": 1, "skip": 0}})
    out = get(admin, "/api/content/items", {"models": models, "persona": "member"})
    assert out["posts"][0]["hero"] == {"title": "member"}
    assert out["home"]["hero"] == {"title": "hm"}
    assert out["paged"]["data"][0]["hero"] == {"title": "member"}
    raw = get(admin, "/api/content/items", {"models": models})
    assert KEY in raw["home"]["hero"]


def test_stored_item_not_changed_by_personalized_reads(admin: Api, quire: Any, posts: dict[str, Any]) -> None:
    stored = quire.store.collection("content/posts").get(posts["_id"])
    assert stored is not None and KEY in stored["hero"]
    get(admin, f"/api/content/item/posts/{posts['_id']}", {"persona": "member", "persona_vars[name]": "Ann"})
    get(admin, "/api/content/items/posts", {"persona": "vip", "persona_vars[name]": "Ann"})
    get(admin, "/api/content/items/posts", {"persona": "vip", "limit": 1, "skip": 0})
    assert quire.store.collection("content/posts").get(posts["_id"]) == stored
    assert get(admin, f"/api/content/item/posts/{posts['_id']}") == posts


# --- pages ----------------------------------------------------------------

@pytest.fixture
def page(admin: Api) -> dict[str, Any]:
    response = admin.post("/api/pages/page", json={"data": {
        "title": "About", "slug": "about",
        "data": {"hero": hero("pg", "pm"), "text": "Hi {{ name }}"},
        "layout": [{"component": "text", "data": {"content": hero("lg", "lm")}}],
    }})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _page_titles(p: dict[str, Any]) -> tuple[Any, Any]:
    return p["data"]["hero"], p["layout"][0]["data"]["content"]


def test_page_by_route(admin: Api, page: dict[str, Any]) -> None:
    body = get(admin, "/api/pages/page", {"route": page["_r"], "persona": "member", "persona_vars[name]": "A&B"})
    assert _page_titles(body) == ({"title": "pm"}, {"title": "lm"})
    assert body["data"]["text"] == "Hi A&amp;B"
    raw = get(admin, "/api/pages/page", {"route": page["_r"]})
    assert KEY in raw["data"]["hero"] and KEY in raw["layout"][0]["data"]["content"]


def test_page_by_id(admin: Api, page: dict[str, Any]) -> None:
    body = get(admin, f"/api/pages/page/{page['_id']}", headers={"X-Persona-Audience": "member"})
    assert _page_titles(body) == ({"title": "pm"}, {"title": "lm"})


def test_pages_list(admin: Api, page: dict[str, Any], quire: Any) -> None:
    before = quire.store.collection("pages/pages").get(page["_id"])
    rows = get(admin, "/api/pages/pages", {"persona": ""})
    assert _page_titles(rows[0]) == ({"title": "pg"}, {"title": "lg"})
    env = get(admin, "/api/pages/pages", {"persona": "member", "limit": 1, "skip": 0})
    assert _page_titles(env["data"][0]) == ({"title": "pm"}, {"title": "lm"})
    assert quire.store.collection("pages/pages").get(page["_id"]) == before


# --- write validation of the variants field -------------------------------

@pytest.fixture
def model(admin: Api) -> str:
    put_model(admin, "docs", type="collection", fields=[{"name": "hero", "type": "variants"}])
    return "docs"


def save(admin: Api, value: Any) -> Any:
    return admin.post("/api/content/item/docs", json={"data": {"hero": value}})


def test_ids_generated_and_defaults_filled(admin: Api, model: str) -> None:
    response = save(admin, {KEY: [{"audience": ["a"], "data": {"t": 1}}, {"id": "mine"}]})
    assert response.status_code == 200, response.text
    variants = response.json()["hero"][KEY]
    assert len(variants[0]["id"]) == 24
    assert variants[1]["id"] == "mine"
    assert variants[1] == {"id": "mine", "active": True, "audience": [], "data": {}}


@pytest.mark.parametrize(("value", "needle"), [
    ({KEY: [{"audience": "a"}]}, "variant 1"),
    ({KEY: [{"id": "x"}, {"label": "Second", "data": []}]}, "variant 2 (Second)"),
    ({KEY: [{"active": "yes"}]}, "active"),
    ({KEY: [{"colour": "red"}]}, "colour"),
    ({KEY: [{"id": "x"}, {"id": "x"}]}, "twice"),
    ({KEY: {}}, KEY),
    ({"other": []}, KEY),
])
def test_invalid_container_is_400_naming_field_and_variant(admin: Api, model: str, value: Any, needle: str) -> None:
    response = save(admin, value)
    assert response.status_code == 400, response.text
    body = response.json()
    assert "hero" in json.dumps(body)
    assert needle in body["error"]


@pytest.mark.parametrize("schedule", [
    {"timezone": "Mars/Olympus"},
    {"timezone": "America"},  # a directory of the zone database (it gave a 500)
    {"tz": "UTC" * 1000},  # a file name too long for the OS (it gave a 500)
    {"start": "not a date"},
    {"days": ["funday"]},
    {"times": {"start": "9am", "end": "10:00"}},
    "always",
])
def test_bad_schedule_is_400(admin: Api, model: str, schedule: Any) -> None:
    response = save(admin, {KEY: [{"label": "Timed", "meta": {"schedule": schedule}}]})
    assert response.status_code == 400, response.text
    assert "variant 1 (Timed)" in response.json()["error"]
    assert "schedule" in response.json()["error"]


def test_days_not_a_list_is_400(admin: Api, model: str) -> None:
    response = save(admin, {KEY: [{"meta": {"schedule": {"days": 5}}}]})
    assert response.status_code == 400, response.text


def test_good_schedule_is_stored(admin: Api, model: str) -> None:
    schedule = {"timezone": "Europe/Berlin", "start": "2026-01-01", "end": "2027-01-01T00:00:00Z",
                "days": ["mon", 7], "times": [{"start": "22:00", "end": "02:00"}]}
    response = save(admin, {KEY: [{"id": "a", "meta": {"schedule": schedule}}]})
    assert response.status_code == 200, response.text
    assert response.json()["hero"][KEY][0]["meta"]["schedule"] == schedule


def test_wrongly_shaped_schedule_in_object_field_does_not_break_reads(admin: Api) -> None:
    put_model(admin, "loose", type="collection", fields=[{"name": "o", "type": "object"}])
    item = create_item(admin, "loose", {"o": {"c": {KEY: [
        {"id": "s", "audience": ["a"], "meta": {"schedule": "always"}, "data": {"t": "s"}},
        {"id": "g", "audience": [], "data": {"t": "g"}},
    ]}}})
    response = admin.get(f"/api/content/item/loose/{item['_id']}", params={"persona": "a"})
    assert response.status_code == 200, response.text
    assert response.json()["o"]["c"] == {"t": "g"}


# --- resolved list rows kept in memory ------------------------------------

def test_list_rows_follow_edits_of_the_item(admin: Api, posts: dict[str, Any]) -> None:
    params = {"persona": "member", "limit": 10}
    assert get(admin, "/api/content/items/posts", params)[0]["hero"] == {"title": "member"}
    admin.post("/api/content/item/posts", json={"data": {**posts, "hero": hero("g", "edited")}})
    assert get(admin, "/api/content/items/posts", params)[0]["hero"] == {"title": "edited"}


def test_list_rows_kept_apart_per_projection_locale_and_population(admin: Api, posts: dict[str, Any]) -> None:
    params = {"persona": "member", "limit": 10}
    full = get(admin, "/api/content/items/posts", params)[0]
    assert full["title"] == "Hi {{ name:you }}"
    only_hero = get(admin, "/api/content/items/posts", {**params, "fields": json.dumps({"hero": 1})})[0]
    assert only_hero["hero"] == {"title": "member"} and "title" not in only_hero
    assert get(admin, "/api/content/items/posts", params)[0] == full  # the projected row is not served here
    assert get(admin, "/api/content/items/posts", {**params, "populate": 1})[0]["hero"] == {"title": "member"}


def test_list_rows_kept_apart_per_reader(admin: Api, posts: dict[str, Any]) -> None:
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "books", type="collection", fields=[
        {"name": "hero", "type": "variants"}, {"name": "author", "type": "contentItemLink",
                                               "opts": {"link": "authors"}}])
    author = create_item(admin, "authors", {"name": "Ann"})
    create_item(admin, "books", {"hero": hero(), "author": {"_id": author["_id"], "_model": "authors"}})
    reader = role_key(admin, "books-only", {"content/books/read": True})
    params = {"persona": "member", "limit": 10, "populate": 1}
    assert get(admin, "/api/content/items/books", params)[0]["author"]["name"] == "Ann"
    seen = get(reader, "/api/content/items/books", params)[0]
    assert seen["hero"] == {"title": "member"}
    assert seen["author"] is None  # the reader may not read authors: the admin's populated row is not served


def test_list_rows_with_a_schedule_are_resolved_again_in_a_later_minute(
        admin: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    import time as real_time
    from datetime import UTC, datetime, timedelta

    from quire.persona import request as persona_request

    now = datetime.now(UTC)
    put_model(admin, "timed", type="collection", fields=[{"name": "hero", "type": "variants"}])
    create_item(admin, "timed", {"hero": {KEY: [
        {"id": "s", "audience": ["a"], "data": {"t": "open"},
         "meta": {"schedule": {"start": (now - timedelta(hours=1)).isoformat(),
                               "end": (now + timedelta(hours=1)).isoformat()}}},
        {"id": "g", "audience": [], "data": {"t": "closed"}},
    ]}})
    params = {"persona": "a", "limit": 10}
    assert get(admin, "/api/content/items/timed", params)[0]["hero"] == {"t": "open"}
    assert get(admin, "/api/content/items/timed", params)[0]["hero"] == {"t": "open"}  # kept
    later = real_time.time() + 2 * 3600
    monkeypatch.setattr(persona_request.time, "time", lambda: later)
    assert get(admin, "/api/content/items/timed", params)[0]["hero"] == {"t": "closed"}
