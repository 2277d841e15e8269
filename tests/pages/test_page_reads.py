"""Reads of pages: by id, lists (filter, sort, fields, envelope rule), the
`locale` view, published-only visibility and read permissions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quire.app import Quire
from tests.conftest import Api, role_key
from tests.pages.conftest import by_route, error_of, make_page, stored, update_page

# -- by id -------------------------------------------------------------------


def test_by_id_answers_the_raw_stored_page_without_locale(de: Api, quire: Quire) -> None:
    page = make_page(de, title="About", title_de="Über", data={"a": 1}, data_de={"a": 2})
    response = de.get(f"/api/pages/page/{page['_id']}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == stored(quire, page["_id"])


@pytest.mark.parametrize("page_id", ["0" * 24, "nope", "ABCDEF0123456789abcdef01"])
def test_by_id_unknown_is_404(admin: Api, page_id: str) -> None:
    make_page(admin, title="P")
    assert error_of(admin.get(f"/api/pages/page/{page_id}"), 404) == {"error": "Page not found"}


def test_drafts_and_archived_pages_are_invisible(admin: Api) -> None:
    draft = make_page(admin, title="Draft", _state=0)
    archived = make_page(admin, title="Archived", _state=-1)
    for page in (draft, archived):
        assert error_of(admin.get(f"/api/pages/page/{page['_id']}"), 404) == {"error": "Page not found"}
        assert error_of(by_route(admin, page["_r"]), 404) == {"error": "Page not found"}
    assert admin.get("/api/pages/pages").json() == []


# -- locale ---------------------------------------------------------------------


@pytest.fixture
def translated(de: Api) -> dict[str, Any]:
    return make_page(
        de, title="About", title_de="Über uns", slug="about", slug_de="ueber-uns",
        data={"intro": "Hi", "cta": "Go", "nested": {"a": 1}}, data_de={"intro": "Hallo", "cta": ""},
        seo={"title": "About us", "description": "Who we are"}, seo_de={"title": "Über uns"},
        layout=[{"component": "text", "data": {"text": "same in all"}}],
    )


def test_locale_answers_localized_values_with_fallback(de: Api, translated: dict[str, Any]) -> None:
    body = de.get(f"/api/pages/page/{translated['_id']}", params={"locale": "de"}).json()
    assert body["title"] == "Über uns"
    assert body["slug"] == "ueber-uns"
    assert body["_r"] == "/ueber-uns"
    # objects merged key by key; an empty translation falls back to the default
    assert body["data"] == {"intro": "Hallo", "cta": "Go", "nested": {"a": 1}}
    assert body["seo"] == {"title": "Über uns", "description": "Who we are"}
    assert body["layout"] == translated["layout"]
    assert not [k for k in body if k.endswith("_de")]
    assert set(body) == set(translated) - {"title_de", "slug_de", "data_de", "seo_de", "_r_de"}


def test_locale_falls_back_to_default_values_where_nothing_is_translated(de: Api) -> None:
    page = make_page(de, title="Plain", data={"x": 1}, seo={"y": 2})
    body = de.get(f"/api/pages/page/{page['_id']}", params={"locale": "de"}).json()
    assert (body["title"], body["slug"], body["_r"]) == ("Plain", "plain", "/plain")
    assert body["data"] == {"x": 1} and body["seo"] == {"y": 2}


def test_unknown_locale_answers_default_values_without_localized_keys(de: Api, translated: dict[str, Any]) -> None:
    body = de.get(f"/api/pages/page/{translated['_id']}", params={"locale": "fr"}).json()
    assert body["title"] == "About" and body["_r"] == "/about"
    assert body["data"] == translated["data"]
    assert not [k for k in body if k.endswith("_de")]


def test_locale_never_writes_back(de: Api, quire: Quire, translated: dict[str, Any]) -> None:
    de.get(f"/api/pages/page/{translated['_id']}", params={"locale": "de"})
    de.get("/api/pages/pages", params={"locale": "de"})
    assert stored(quire, translated["_id"]) == translated


def test_list_with_locale_localizes_every_page(de: Api, translated: dict[str, Any]) -> None:
    make_page(de, title="Contact", title_de="Kontakt")
    body = de.get("/api/pages/pages", params={"locale": "de"}).json()
    assert [p["title"] for p in body] == ["Über uns", "Kontakt"]
    assert [p["_r"] for p in body] == ["/ueber-uns", "/kontakt"]
    assert not [k for p in body for k in p if k.endswith("_de")]


def test_fields_projection_applies_after_localizing(de: Api, translated: dict[str, Any]) -> None:
    fields = json.dumps({"title": 1, "data.intro": 1, "_id": 0})
    body = de.get(f"/api/pages/page/{translated['_id']}", params={"locale": "de", "fields": fields}).json()
    assert body == {"title": "Über uns", "data": {"intro": "Hallo"}}
    body = by_route(de, "/ueber-uns", locale="de", fields=fields).json()
    assert body == {"title": "Über uns", "data": {"intro": "Hallo"}}


# -- lists ----------------------------------------------------------------------


@pytest.fixture
def five(de: Api) -> list[dict[str, Any]]:
    names = [("Delta", "Vier"), ("Alpha", "Zwei"), ("Echo", "Eins"), ("Bravo", "Drei"), ("Charlie", "Fünf")]
    pages = [make_page(de, title=t, title_de=g, data={"n": i}) for i, (t, g) in enumerate(names)]
    make_page(de, title="Hidden draft", _state=0)
    return pages


def test_list_is_a_bare_array_in_creation_order(de: Api, five: list[dict[str, Any]]) -> None:
    response = de.get("/api/pages/pages")
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, list)
    assert [p["_id"] for p in body] == [p["_id"] for p in five]
    assert body[0] == five[0]


def test_list_keeps_creation_order_after_updates(de: Api, five: list[dict[str, Any]]) -> None:
    update_page(de, five[0]["_id"], title="Delta 2")
    update_page(de, five[2]["_id"], _o=-5)
    body = de.get("/api/pages/pages").json()
    assert [p["_id"] for p in body] == [p["_id"] for p in five]


def test_limit_and_skip_together_answer_the_envelope(de: Api, five: list[dict[str, Any]]) -> None:
    body = de.get("/api/pages/pages", params={"limit": 2, "skip": 1}).json()
    assert set(body) == {"data", "meta"}
    assert [p["_id"] for p in body["data"]] == [five[1]["_id"], five[2]["_id"]]
    assert body["meta"] == {"total": 5}


def test_envelope_total_counts_the_filtered_pages(de: Api, five: list[dict[str, Any]]) -> None:
    params = {"limit": 1, "skip": 0, "filter": json.dumps({"data.n": {"$gte": 2}})}
    body = de.get("/api/pages/pages", params=params).json()
    assert body["meta"] == {"total": 3}
    assert [p["_id"] for p in body["data"]] == [five[2]["_id"]]


def test_limit_zero_means_no_limit(de: Api, five: list[dict[str, Any]]) -> None:
    body = de.get("/api/pages/pages", params={"limit": 0}).json()
    assert [p["_id"] for p in body] == [p["_id"] for p in five]
    body = de.get("/api/pages/pages", params={"limit": 0, "skip": 3}).json()
    assert [p["_id"] for p in body["data"]] == [five[3]["_id"], five[4]["_id"]]
    assert body["meta"] == {"total": 5}


def test_limit_or_skip_alone_answer_a_bare_array(de: Api, five: list[dict[str, Any]]) -> None:
    body = de.get("/api/pages/pages", params={"limit": 2}).json()
    assert [p["_id"] for p in body] == [five[0]["_id"], five[1]["_id"]]
    body = de.get("/api/pages/pages", params={"skip": 3}).json()
    assert [p["_id"] for p in body] == [five[3]["_id"], five[4]["_id"]]


def test_list_filter(de: Api, five: list[dict[str, Any]]) -> None:
    body = de.get("/api/pages/pages", params={"filter": json.dumps({"title": {"$in": ["Alpha", "Echo"]}})}).json()
    assert [p["title"] for p in body] == ["Alpha", "Echo"]
    body = de.get("/api/pages/pages", params={"filter": "{title:'Bravo'}"}).json()
    assert [p["_id"] for p in body] == [five[3]["_id"]]
    body = de.get("/api/pages/pages", params={"filter[title]": "Charlie"}).json()
    assert [p["_id"] for p in body] == [five[4]["_id"]]


def test_list_filter_never_shows_drafts(de: Api, five: list[dict[str, Any]]) -> None:
    for spec in ({"_state": 0}, {"title": "Hidden draft"}, {"$or": [{"_state": 0}, {"_state": 1}]}):
        body = de.get("/api/pages/pages", params={"filter": json.dumps(spec)}).json()
        assert "Hidden draft" not in [p["title"] for p in body]


def test_list_filter_and_sort_by_localized_key(de: Api, five: list[dict[str, Any]]) -> None:
    body = de.get("/api/pages/pages", params={"filter": json.dumps({"title:de": "Drei"})}).json()
    assert [p["_id"] for p in body] == [five[3]["_id"]]
    body = de.get("/api/pages/pages", params={"sort": json.dumps({"title:de": 1})}).json()
    assert [p["title"] for p in body] == ["Bravo", "Echo", "Charlie", "Delta", "Alpha"]


def test_list_sort(de: Api, five: list[dict[str, Any]]) -> None:
    body = de.get("/api/pages/pages", params={"sort": json.dumps({"title": -1})}).json()
    assert [p["title"] for p in body] == ["Echo", "Delta", "Charlie", "Bravo", "Alpha"]
    body = de.get("/api/pages/pages", params={"sort": json.dumps({"data.n": -1}), "limit": 2, "skip": 0}).json()
    assert [p["title"] for p in body["data"]] == ["Charlie", "Bravo"]
    assert body["meta"]["total"] == 5


def test_list_fields(de: Api, five: list[dict[str, Any]]) -> None:
    body = de.get("/api/pages/pages", params={"fields": json.dumps({"title": 1})}).json()
    assert body == [{"_id": p["_id"], "title": p["title"]} for p in five]
    body = de.get("/api/pages/pages", params={"fields": json.dumps({"layout": 0, "data": 0})}).json()
    assert all("layout" not in p and "data" not in p and "title" in p for p in body)


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"filter": "{nope"}, "<filter> is not valid json"),
        ({"sort": "[nope"}, "<sort> is not valid json"),
        ({"fields": "{x"}, "<fields> is not valid json"),
        ({"filter": json.dumps({"title": {"$where": "1"}})}, "$where"),
        ({"filter": json.dumps({"title": {"$bogus": 1}})}, "$bogus"),
        ({"fields": json.dumps({"title": 1, "data": 0})}, None),
        ({"limit": "x"}, "limit"),
        ({"skip": "-1"}, "skip"),
        ({"filter": "[1, 2]"}, None),
    ],
)
def test_list_bad_parameters_are_400(de: Api, five: list[dict[str, Any]], params: dict[str, str],
                                     words: str | None) -> None:
    body = error_of(de.get("/api/pages/pages", params=params), 400)
    if words:
        assert words in body["error"]


@pytest.mark.parametrize("url", ["/api/pages/page/{id}", "/api/pages/page?route=/p"])
def test_single_page_bad_fields_is_400(admin: Api, url: str) -> None:
    page = make_page(admin, title="P")
    response = admin.get(url.format(id=page["_id"]), params={"fields": "{x"})
    assert "<fields> is not valid json" in error_of(response, 400)["error"]


def test_empty_list(admin: Api) -> None:
    assert admin.get("/api/pages/pages").json() == []
    assert admin.get("/api/pages/pages", params={"limit": 5, "skip": 0}).json() == {"data": [], "meta": {"total": 0}}


# -- permissions --------------------------------------------------------------------

READS = [
    "/api/pages/pages", "/api/pages/page?route=/p", "/api/pages/page/{id}", "/api/pages/routes",
    "/api/pages/routes?locale=de", "/api/pages/settings", "/api/pages/sitemap", "/api/pages/sitemap.xml",
    "/api/pages/menus", "/api/pages/menu/main",
]


@pytest.fixture
def published(admin: Api) -> dict[str, Any]:
    page = make_page(admin, title="P")
    assert admin.post("/api/pages/menu", json={"data": {"name": "main", "links": []}}).status_code == 200
    return page


@pytest.mark.parametrize("url", READS)
def test_reads_without_a_key_are_401(anon: Api, published: dict[str, Any], url: str) -> None:
    response = anon.get(url.format(id=published["_id"]))
    assert error_of(response, 401) == {"error": "Authentication failed"}


@pytest.mark.parametrize("url", READS)
def test_reads_with_a_key_lacking_pages_read_are_403(admin: Api, published: dict[str, Any], url: str) -> None:
    other = role_key(admin, "writer", {"pages/manage": True, "content/*/read": True})
    response = other.get(url.format(id=published["_id"]))
    assert error_of(response, 403) == {"error": "Permission denied"}


@pytest.mark.parametrize("url", READS)
def test_reads_with_pages_read_are_200(admin: Api, published: dict[str, Any], url: str) -> None:
    reader = role_key(admin, "reader", {"pages/read": True})
    assert reader.get(url.format(id=published["_id"])).status_code == 200


@pytest.mark.parametrize("url", READS)
def test_public_role_granted_pages_read_reads_without_a_key(
    admin: Api, anon: Api, published: dict[str, Any], url: str
) -> None:
    assert admin.put("/api/system/roles/public", json={"permissions": {"pages/read": True}}).status_code == 200
    assert anon.get(url.format(id=published["_id"])).status_code == 200


def test_unknown_key_is_401(client: Any, published: dict[str, Any]) -> None:
    response = client.get("/api/pages/pages", headers={"api-key": "not-a-key"})
    assert error_of(response, 401) == {"error": "Authentication failed"}


def test_key_in_query_or_bearer_works(client: Any, admin_key: str, published: dict[str, Any]) -> None:
    assert client.get("/api/pages/pages", params={"api_key": admin_key}).status_code == 200
    assert client.get("/api/pages/pages", headers={"Authorization": f"Bearer {admin_key}"}).status_code == 200


def test_unknown_pages_path_is_a_json_404(admin: Api) -> None:
    response = admin.get("/api/pages/nothing")
    error_of(response, 404)
