"""`/api/gql` where Quire answers differently from Cockpit on purpose
(docs/cockpit.md: where Cockpit is wrong), and the parts Cockpit does not
have: permissions in the schema, limits, persisted queries, the schema
following model changes."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest

from quire.app import Quire, build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model
from tests.gql.conftest import Site, recorded


def gql(api: Api, query: str, variables: dict[str, Any] | None = None, **extra: Any) -> tuple[int, Any]:
    answer = api.post("/api/gql", json={"query": query, "variables": variables or {}, **extra})
    return answer.status_code, answer.json()


@pytest.fixture
def reader(quire: Quire, client: TestClient) -> Api:
    """A key whose role reads posts only (the recorded `postsreader`)."""
    quire.auth.save_role("postsreader", {"permissions": {"content/posts/read": True}})
    return Api(client, str(quire.auth.create_key("posts reader", "postsreader")["key"]))


# -- where Cockpit is wrong ----------------------------------------------------

def test_skip_without_limit_skips(site: Site) -> None:
    status, body = gql(site.admin, '{ content(model: "posts", skip: 3, fields: {title: 1}) }')
    assert status == 200 and [p["title"] for p in body["data"]["content"]] == ["Post By Hidden Author"]
    assert len(recorded("05")["response"]["data"]["content"]) == 4  # Cockpit ignored skip


def test_a_filter_may_be_json_text_since_dollar_cannot_start_a_graphql_name(site: Site) -> None:
    status, body = gql(site.admin, '{ content(model: "posts", filter: "{\\"rating\\": {\\"$gt\\": 2}}", '
                                   'fields: {title: 1}) }')
    assert status == 200 and [p["title"] for p in body["data"]["content"]] == [
        "Hello World", "Second Post", "Post By Hidden Author"]
    status, body = gql(site.admin, '{ postsModel(filter: "{\\"rating\\": 3}") { title } }')
    assert body == {"data": {"postsModel": [{"title": "Second Post"}]}}
    status, body = gql(site.admin, '{ content(model: "posts", filter: "{rating") }')
    assert status == 200 and body["data"] == {"content": None}
    assert body["errors"][0]["message"] == "<filter> is not valid JSON"
    assert body["errors"][0]["extensions"]["code"] == "BAD_REQUEST"


def test_populate_reads_as_rest_does_not_unpublished_or_unreadable_items(site: Site, reader: Api) -> None:
    """Cockpit populated an unpublished author, and authors for a key that
    may not read them: Quire's populate is REST's (docs/query-language.md)."""
    query = '{ content(model: "posts", populate: 1, fields: {title: 1, author: 1}) }'
    params = {"populate": "1", "fields": '{"title": 1, "author": 1}'}
    for api in (site.admin, reader):
        status, body = gql(api, query)
        assert status == 200 and body["data"]["content"] == api.get("/api/content/items/posts", params=params).json()
    authors = {p["title"]: p["author"] for p in gql(site.admin, query)[1]["data"]["content"]}
    assert authors["Hello World"]["name"] == "Ada Lovelace"
    assert authors["Post By Hidden Author"] != recorded("14")["response"]["data"]["content"][3]["author"]


def test_content_tree_of_a_collection_is_an_error(site: Site) -> None:
    status, body = gql(site.admin, '{ contentTree(model: "posts") }')
    assert status == 200 and body["data"] == {"contentTree": None}
    assert body["errors"][0]["message"] == "Model posts is not a tree"


def test_the_selection_decides_what_is_read_and_projection_is_ignored_as_cockpit_does(site: Site) -> None:
    status, body = gql(site.admin, '{ postsModel(projection: "title", limit: 1) { _id title rating } }')
    assert body == {"data": {"postsModel": [{"_id": body["data"]["postsModel"][0]["_id"], "title": "Hello World",
                                             "rating": 5}]}}
    status, body = gql(site.admin, '{ postsModel(limit: 1) { ...F } } fragment F on postsModel { seo { title } }')
    assert body == {"data": {"postsModel": [{"seo": {"title": "Hello SEO"}}]}}


def test_a_role_sees_the_models_it_may_read_and_nothing_else(site: Site, reader: Api, anon: Api) -> None:
    status, body = gql(reader, "{ __schema { queryType { fields { name } } } }")
    names = [f["name"] for f in body["data"]["__schema"]["queryType"]["fields"]]
    assert names[:3] == ["content", "contentTree", "postsModel"]
    assert {"posts", "post", "postsCount"} <= set(names) and not [n for n in names if "author" in n.lower()]
    status, body = gql(reader, "{ authorsModel { name } }")
    assert status == 400 and body["errors"][0]["message"].startswith("Cannot query field 'authorsModel'")
    status, body = gql(reader, '{ posts: content(model: "posts", limit: 1, fields: {title: 1}) '
                               'authors: content(model: "authors") }')
    assert status == 200 and body["data"]["posts"][0]["title"] == "Hello World" and body["data"]["authors"] is None
    assert body["errors"][0]["path"] == ["authors"] and body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    status, body = gql(reader, 'mutation { deleteContentItem(model: "posts", id: "000000000000000000000000") '
                               '{ success error } }')
    assert body["data"]["deleteContentItem"] == {"success": False, "error": "Permission denied"}
    assert gql(anon, "{ postsModel { title } }")[0] == 400  # the public role reads nothing here


def test_a_wrong_key_is_refused_as_on_every_route(client: TestClient) -> None:
    answer = client.post("/api/gql", json={"query": "{ __typename }"}, headers={"api-key": "API-nosuchkey"})
    assert answer.status_code == 401 and answer.json() == {"error": "Authentication failed"}


def test_requests_cockpit_broke_on_are_read(site: Site) -> None:
    admin = site.admin
    two = "query A { settingsModel { sitename } } query B { authorsModel(limit: 1) { name } }"
    assert gql(admin, two, operationName="B")[1] == {"data": {"authorsModel": [{"name": "Ada Lovelace"}]}}
    assert gql(admin, two)[0] == 400
    text = admin.post("/api/gql", json={"query": "query($l: Int) { authorsModel(limit: $l) { name } }",
                                        "variables": '{"l": 1}'})
    assert text.json() == {"data": {"authorsModel": [{"name": "Ada Lovelace"}]}}
    raw = admin.client.post("/api/gql", content=b"{ settingsModel { sitename } }",
                            headers={"content-type": "application/graphql", "api-key": admin.key or ""})
    assert raw.json() == {"data": {"settingsModel": {"sitename": "My Cockpit Site"}}}
    got = admin.get("/api/gql", params={"query": "{ settingsModel { sitename } }"})
    assert got.status_code == 200 and got.json()["data"]["settingsModel"]["sitename"] == "My Cockpit Site"
    for body, status, words in [(b"{not json", 400, "not valid JSON"), (b"{}", 400, "A query is missing"),
                                (b"[]", 400, "Batched operations"), (b'{"query": 5}', 400, "must be a text"),
                                (b'{"query": "{ __typename }", "variables": [1]}', 400, "must be an object")]:
        answer = admin.client.post("/api/gql", content=body, headers={"content-type": "application/json",
                                                                      "api-key": admin.key or ""})
        assert answer.status_code == status and words in answer.json()["error"], (body, answer.text)
        assert answer.json()["errors"][0]["message"] == answer.json()["error"]


def test_mutations_answer_the_saved_item_and_say_what_is_wrong(site: Site) -> None:
    admin = site.admin
    save = "mutation($d: JsonType!) { saveContentItem(model: \"posts\", data: $d) { item error } }"
    status, body = gql(admin, save, {"d": {"title": "Made", "tags": ["a", "b"], "_state": 0}})
    made = body["data"]["saveContentItem"]["item"]
    assert status == 200 and made["tags"] == ["a", "b"] and made["_state"] == 0
    literal = gql(admin, 'mutation { saveContentItem(model: "posts", data: {title: "Lit", tags: ["x"]}) '
                         '{ item error } }')[1]  # a list in a literal: Cockpit failed on it
    assert literal["data"]["saveContentItem"]["item"]["tags"] == ["x"]
    status, body = gql(admin, save, {"d": {"_id": made["_id"], "title": "Changed"}})
    changed = body["data"]["saveContentItem"]["item"]
    assert changed["title"] == "Changed" and changed["tags"] == ["a", "b"]  # the whole item, not what was sent
    status, body = gql(admin, save, {"d": {"_id": made["_id"], "title": "Late", "_rev": 1}})
    assert "revision" in body["data"]["saveContentItem"]["error"]  # a stale _rev, as REST's 409
    for data, words in [({"_id": "000000000000000000000000", "title": "Ghost"}, "Item not found"),
                        ({"rating": 1}, "title is required"), ({}, "Item data is missing"),
                        ("text", "Item data is missing")]:
        status, body = gql(admin, save, {"d": data})
        assert body["data"]["saveContentItem"] == {"item": None, "error": body["data"]["saveContentItem"]["error"]}
        assert words in body["data"]["saveContentItem"]["error"], (data, body)
    unknown = gql(admin, 'mutation { saveContentItem(model: "nosuch", data: {a: 1}) { error } }')[1]
    assert unknown["data"]["saveContentItem"]["error"] == "Model <nosuch> not found"
    delete = "mutation($id: String!) { deleteContentItem(model: \"posts\", id: $id) { success error } }"
    assert gql(admin, delete, {"id": made["_id"]})[1]["data"]["deleteContentItem"] == {"success": True, "error": None}
    assert gql(admin, delete, {"id": made["_id"]})[1]["data"]["deleteContentItem"] == {
        "success": False, "error": "Item not found"}
    by_get = admin.get("/api/gql", params={"query": 'mutation { deleteContentItem(model: "posts", id: "x") '
                                                    '{ success } }'})
    assert by_get.status_code == 405 and by_get.headers["allow"] == "POST"


# -- limits --------------------------------------------------------------------

def test_documents_past_the_limits_are_refused_quickly(site: Site) -> None:
    admin = site.admin
    cases = [
        ("{ " + " ".join(f"a{i}: __typename" for i in range(2000)) + " }", "aliases"),
        ("{ " + " ".join(f"a{i}:__typename" for i in range(10000)) + " }", "longer than"),
        ("{ postsModel { " + "seo { " * 20 + "title" + " }" * 20 + " } }", "nested deeper"),
        ("fragment A on Query { ...B } fragment B on Query { ...A } { ...A }", "Cannot spread fragment"),
        ("{ " + "__typename " * 30000 + "}", "longer than"),
        ('{ a: postsModel(limit: 1000) { author } b: postsModel(limit: 1000) { author } '
         'c: content(model: "posts") d: content(model: "authors") }', None),
        ("{ __schema { types { fields { type { fields { type { fields { type { name } } } } } } } } }",
         "introspection"),
    ]
    for query, words in cases:
        started = time.monotonic()
        status, body = gql(admin, query)
        assert time.monotonic() - started < 5, query[:60]
        if words is None:
            assert status == 200
            continue
        assert status in (400, 413), (query[:60], body)
        assert words.lower() in body["errors"][0]["message"].lower(), (query[:60], body["errors"][0])


def test_the_cost_counts_items_times_nesting(quire: Quire, admin: Api) -> None:
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    many = "{ " + " ".join(f"a{i}: authorsModel(limit: 1000) {{ name _id _state _created }}" for i in range(20)) + " }"
    status, body = gql(admin, many)
    assert status == 400 and "at most 50,000" in body["errors"][0]["message"]
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COSTLY"


def test_a_list_without_limit_answers_at_most_max_items(data_dir: Any) -> None:
    app = build_app(load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true", "QUIRE_MODULES_PACKAGES": "false",
                                                 "QUIRE_GRAPHQL_MAX_ITEMS": "3"}))
    try:
        admin = Api(TestClient(app), str(app.state.quire.auth.create_key("a", "admin")["key"]))
        put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
        for n in range(4):
            create_item(admin, "authors", {"name": f"n{n}"})
        status, body = gql(admin, "{ authorsModel { name } }")
        assert body["data"] == {"authorsModel": None}
        assert body["errors"][0]["message"] == ("authors has more than 3 items here: ask for a page with limit "
                                                "and skip")
        assert len(gql(admin, "{ authorsModel(limit: 3, skip: 1) { name } }")[1]["data"]["authorsModel"]) == 3
        assert "from 1 to 3" in gql(admin, "{ authorsModel(limit: 4) { name } }")[1]["errors"][0]["message"]
    finally:
        app.state.quire.close()


# -- persisted queries ---------------------------------------------------------

def test_persisted_queries_by_hash(site: Site) -> None:
    admin = site.admin
    query = "{ settingsModel { sitename } }"
    digest = hashlib.sha256(query.encode()).hexdigest()
    ext = json.dumps({"persistedQuery": {"version": 1, "sha256Hash": digest}})
    unknown = admin.get("/api/gql", params={"extensions": ext})
    assert unknown.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    wrong = admin.get("/api/gql", params={"query": "{ __typename }", "extensions": ext})
    assert wrong.status_code == 400 and wrong.json()["error"] == "provided sha does not match query"
    kept = admin.get("/api/gql", params={"query": query, "extensions": ext})
    assert kept.json() == {"data": {"settingsModel": {"sitename": "My Cockpit Site"}}}
    by_hash = admin.get("/api/gql", params={"extensions": ext})
    assert by_hash.json() == {"data": {"settingsModel": {"sitename": "My Cockpit Site"}}}
    bad = admin.get("/api/gql", params={"extensions": '{"persistedQuery": {"version": 1, "sha256Hash": "zz"}}'})
    assert bad.status_code == 400 and "64 hexadecimal digits" in bad.json()["error"]


# -- the schema follows the models ---------------------------------------------

def test_the_schema_follows_model_changes_on_every_instance(data_dir: Any) -> None:
    env = {"QUIRE_SERVER_QUIET": "true", "QUIRE_MODULES_PACKAGES": "false"}
    one, two = build_app(load_settings(data_dir, env=env)), build_app(load_settings(data_dir, env=env))
    try:
        key = str(one.state.quire.auth.create_key("a", "admin")["key"])
        first, second = Api(TestClient(one), key), Api(TestClient(two), key)
        assert gql(second, "{ notesModel { text } }")[0] == 400
        put_model(first, "notes", type="collection", fields=[{"name": "text", "type": "text"}])
        create_item(first, "notes", {"text": "hi"})
        assert gql(second, "{ notesModel { text } }")[1] == {"data": {"notesModel": [{"text": "hi"}]}}
        put_model(first, "notes", type="collection", fields=[{"name": "text", "type": "text"},
                                                              {"name": "score", "type": "number"}])
        assert gql(second, "{ notesModel { text score } }")[1] == {"data": {"notesModel": [{"text": "hi",
                                                                                            "score": None}]}}
    finally:
        one.state.quire.close()
        two.state.quire.close()


def test_locale_in_filter_and_sort_keys_is_the_requested_locale(site: Site) -> None:
    query = ('query($f: JsonType, $s: JsonType, $l: String) { content(model: "posts", locale: $l, filter: $f, '
             'sort: $s, fields: {title: 1}) }')
    german = gql(site.admin, query, {"f": {"summary:locale": "Dritte Zusammenfassung"}, "l": "de",
                                     "s": {"summary:locale": 1}})[1]
    assert german == {"data": {"content": [{"_id": german["data"]["content"][0]["_id"], "title": "Third Post"}]}}
    default = gql(site.admin, query, {"f": {"summary:locale": "Third summary"}})[1]
    assert [p["title"] for p in default["data"]["content"]] == ["Third Post"]


def test_a_huge_list_of_ids_is_refused_in_bounded_time(site: Site) -> None:
    ids = [f"{n:024x}" for n in range(10_000)]
    started = time.monotonic()
    answer = site.admin.post("/api/gql", json={"query": "query($f: JsonType) { postsModel(filter: $f) { title } }",
                                               "variables": {"f": {"_id": {"$in": ids}}}})
    assert time.monotonic() - started < 5
    body = answer.json()
    assert answer.status_code == 200 and body["data"] == {"postsModel": None}
    assert body["errors"][0]["extensions"]["code"] == "BAD_REQUEST"


def test_a_get_querys_answer_is_kept_until_the_data_changes(site: Site, quire: Quire) -> None:
    query = {"query": "{ authorsModel(limit: 5) { name } }"}
    first = site.admin.get("/api/gql", params=query).json()
    answers = quire.cache.region("gql.answers", 1)
    assert len(answers._current()) == 1 and site.admin.get("/api/gql", params=query).json() == first
    site.admin.post("/api/content/item/authors", json={"data": {"name": "Zoe"}})
    after = site.admin.get("/api/gql", params=query).json()
    assert [a["name"] for a in after["data"]["authorsModel"]][-1] == "Zoe"  # a write: answered afresh
    site.admin.get("/api/gql", params={"query": "{ nosuch }"})  # refused: not kept
    site.admin.get("/api/gql", params={"query": '{ previewItem(model: "authors", token: "x") }'})  # a token: not kept
    assert len(answers._current()) == 1
