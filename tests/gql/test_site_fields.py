"""Pages, menus, the pages' settings, translations and search in the
GraphQL schema answer what their REST routes answer; personalization
applies to GraphQL answers as to REST's; a role sees the fields of the
modules it may read."""

from __future__ import annotations

from typing import Any

from quire.app import Quire
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model
from tests.persona.test_http import FIELDS, hero


def gql(api: Api, query: str, headers: dict[str, str] | None = None, **variables: Any) -> Any:
    answer = api.post("/api/gql", json={"query": query, "variables": variables}, headers=headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "errors" not in body, body
    return body["data"]


def test_pages_menus_settings_translations_and_search_answer_as_rest(admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    about = admin.post("/api/pages/page", json={"data": {"title": "About", "slug": "about", "slug_de": "ueber",
                                                         "type": "layout", "_state": 1}}).json()
    admin.post("/api/pages/page", json={"data": {"title": "Hidden", "slug": "hidden", "type": "layout"}})
    admin.post("/api/pages/menu", json={"data": {"name": "main", "links": [{"url": "/about", "title": "About"}]}})
    admin.post("/api/pages/settings", json={"data": {"seo": {"title": "Site"}}})
    admin.put("/api/l10n/project/site", json={"locales": ["en", "de"], "keys": {"hi": {"en": "Hi", "de": "Hallo"}}})
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "Harbour lights"})
    admin.put("/api/searchmod/indexes/posts", json={"model": "posts", "fields": ["title"]})

    data = gql(admin, """query($route: String, $id: String) {
        pages(sort: {title: 1}) page(route: $route, locale: "de") byId: page(id: $id) pageRoutes
        menus menu(name: "main") pageSettings
        translations(project: "site") de: translations(project: "site", locale: "de")
        search(index: "posts", q: "harbour") }""", route="/ueber", id=about["_id"])
    get = lambda path, **params: admin.get(path, params=params).json()  # noqa: E731
    assert data["pages"] == get("/api/pages/pages", sort='{"title": 1}')
    assert data["page"] == get("/api/pages/page", route="/ueber", locale="de")
    assert data["byId"] == get(f"/api/pages/page/{about['_id']}")
    assert data["pageRoutes"] == get("/api/pages/routes")
    assert data["menus"] == get("/api/pages/menus") and data["menu"] == get("/api/pages/menu/main")
    assert data["pageSettings"] == get("/api/pages/settings")
    assert data["translations"] == get("/api/l10n/project/site")
    assert data["de"] == get("/api/l10n/project/site/de") and data["de"]["hi"] == "Hallo"
    assert data["search"] == get("/api/searchmod/search/posts", q="harbour")
    assert data["search"]["hits"][0]["title"] == "Harbour lights"


def test_personalization_applies_as_on_rest(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=FIELDS)
    made = create_item(admin, "posts", {"title": "Hi", "hero": hero()})
    member = {"x-persona-audience": "member"}
    data = gql(admin, '{ content(model: "posts") postsModel { hero } }', headers=member)
    assert data["content"][0]["hero"] == {"title": "member"} and data["postsModel"][0]["hero"] == {"title": "member"}
    assert data["content"] == admin.get("/api/content/items/posts", params={"locale": "default"},
                                        headers=member).json()
    plain = gql(admin, "query($id: String) { postsModel(_id: $id) { hero } }", id=made["_id"])
    assert plain["postsModel"][0]["hero"] == made["hero"]  # no persona asked: the stored variants


def test_a_role_sees_the_site_fields_of_the_modules_it_may_read(quire: Quire, client: TestClient) -> None:
    quire.auth.save_role("menus", {"permissions": {"content/posts/read": True}})
    key = Api(client, str(quire.auth.create_key("menus only", "menus")["key"]))
    names = {f["name"] for f in gql(key, "{ __schema { queryType { fields { name } } } }")["__schema"]["queryType"]["fields"]}
    assert not names & {"pages", "page", "pageRoutes", "translations", "search"}
    assert {"menus", "menu", "pageSettings", "content"} <= names
