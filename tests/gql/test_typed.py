"""The typed schema beside Cockpit's: per model a connection of typed
items, one item, a count, typed links and assets, and typed mutations
with REST's checks, permissions and `_rev` conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.assets.helpers import solid, upload_one
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model


def gql(api: Api, query: str, **variables: Any) -> Any:
    answer = api.post("/api/gql", json={"query": query, "variables": variables})
    assert answer.status_code == 200, answer.text
    return answer.json()


def data(api: Api, query: str, **variables: Any) -> Any:
    body = gql(api, query, **variables)
    assert "errors" not in body, body
    return body["data"]


@pytest.fixture
def blog(admin: Api) -> dict[str, Any]:
    put_model(admin, "authors", type="collection", fields=[
        {"name": "name", "type": "text"}, {"name": "posts", "type": "contentItemLink", "multiple": True,
                                           "opts": {"link": "posts"}}])
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text", "required": True}, {"name": "rating", "type": "number"},
        {"name": "tags", "type": "tags"}, {"name": "published", "type": "boolean"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
        {"name": "image", "type": "asset"},
        {"name": "seo", "type": "set", "opts": {"fields": [{"name": "title", "type": "text"},
                                                          {"name": "keywords", "type": "tags"}]}}])
    put_model(admin, "settings", type="singleton", fields=[{"name": "sitename", "type": "text"}])
    picture = upload_one(admin, "harbour.png", solid(40, 20), "image/png")
    ann = create_item(admin, "authors", {"name": "Ann"})
    posts = [create_item(admin, "posts", {"title": f"Post {n}", "rating": n, "tags": ["t"],
                                          "author": {"_model": "authors", "_id": ann["_id"]},
                                          "image": {"_id": picture["_id"]}, "seo": {"title": f"S{n}"}})
             for n in range(1, 6)]
    admin.post("/api/content/item/authors", json={"data": {
        "_id": ann["_id"], "posts": [{"_model": "posts", "_id": p["_id"]} for p in posts[:2]]}})
    admin.post("/api/content/item/settings", json={"data": {"sitename": "Harbour"}})
    return {"ann": ann, "posts": posts, "picture": picture}


def test_a_list_is_a_connection_of_typed_items_with_links_and_assets(admin: Api, blog: dict[str, Any]) -> None:
    found = data(admin, """{ posts(sort: {rating: -1}, limit: 2) {
        total next items { _id title rating tags seo { title keywords }
          author { name posts { title author { name } } }
          image { _id width height type url thumb: image(width: 20, mode: "thumbnail") } } } }""")["posts"]
    assert found["total"] == 5 and found["next"]
    first = found["items"][0]
    assert first["title"] == "Post 5" and first["rating"] == 5 and first["tags"] == ["t"]
    assert first["seo"] == {"title": "S5", "keywords": None}
    assert first["author"]["name"] == "Ann"
    assert [p["title"] for p in first["author"]["posts"]] == ["Post 1", "Post 2"]
    assert first["author"]["posts"][0]["author"] == {"name": "Ann"}  # three hops, one read a level
    picture = blog["picture"]
    assert first["image"] == {"_id": picture["_id"], "width": 40, "height": 20, "type": "image",
                              "url": f"/storage/uploads{picture['path']}",
                              "thumb": f"/api/assets/image/{picture['_id']}?w=20&m=thumbnail"}
    following = data(admin, "query($a: String) { posts(sort: {rating: -1}, limit: 2, after: $a) { items { title } } }",
                     a=found["next"])["posts"]
    assert [p["title"] for p in following["items"]] == ["Post 3", "Post 2"]


def test_one_item_a_count_and_a_singleton(admin: Api, blog: dict[str, Any]) -> None:
    one = blog["posts"][2]
    got = data(admin, """query($id: ID!, $f: JsonType) { post(id: $id) { title author { name } }
        postsCount(filter: $f) settings { sitename } missing: post(id: "000000000000000000000000") { title } }""",
               id=one["_id"], f={"rating": {"$gte": 4}})
    assert got == {"post": {"title": "Post 3", "author": {"name": "Ann"}}, "postsCount": 2,
                   "settings": {"sitename": "Harbour"}, "missing": None}


def test_typed_mutations_check_as_rest_does(admin: Api, blog: dict[str, Any]) -> None:
    made = data(admin, """mutation($a: ID) { createPost(data: {title: "New", rating: 9, author: $a,
        seo: {title: "N", keywords: ["k"]}}, publish: true) { _id _rev title author { name } seo { keywords } } }""",
                a=blog["ann"]["_id"])["createPost"]
    assert made["title"] == "New" and made["author"] == {"name": "Ann"} and made["seo"] == {"keywords": ["k"]}
    changed = data(admin, "mutation($id: ID!, $rev: Int) { updatePost(id: $id, rev: $rev, data: {rating: 10}) "
                          "{ title rating _rev } }", id=made["_id"], rev=made["_rev"])["updatePost"]
    assert changed == {"title": "New", "rating": 10, "_rev": made["_rev"] + 1}
    stale = gql(admin, "mutation($id: ID!) { updatePost(id: $id, rev: 1, data: {rating: 11}) { rating } }",
                id=made["_id"])
    assert stale["data"] == {"updatePost": None} and stale["errors"][0]["extensions"]["code"] == "CONFLICT"
    refused = gql(admin, 'mutation { createPost(data: {rating: 1}) { _id } }')
    assert "title is required" in refused["errors"][0]["message"]
    assert refused["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert data(admin, 'mutation { updateSettings(data: {sitename: "Renamed"}) { sitename } }') == {
        "updateSettings": {"sitename": "Renamed"}}
    assert data(admin, "mutation($id: ID!) { deletePost(id: $id) }", id=made["_id"]) == {"deletePost": True}
    gone = gql(admin, "mutation($id: ID!) { deletePost(id: $id) }", id=made["_id"])
    assert gone["errors"][0]["message"] == "Item not found"


def test_a_role_gets_the_typed_fields_it_may_use(quire: Quire, client: TestClient, blog: dict[str, Any]) -> None:
    quire.auth.save_role("reader", {"permissions": {"content/posts/read": True}})
    reader = Api(client, str(quire.auth.create_key("reader", "reader")["key"]))
    body = gql(reader, "{ __schema { queryType { fields { name } } mutationType { fields { name } } } }")
    queries = {f["name"] for f in body["data"]["__schema"]["queryType"]["fields"]}
    mutations = {f["name"] for f in body["data"]["__schema"]["mutationType"]["fields"]}
    assert {"posts", "post", "postsCount"} <= queries and not {"authors", "author", "settings"} & queries
    assert mutations == {"saveContentItem", "deleteContentItem"}
    # a link to a model the role may not read is the stored link, as JSON
    item = data(reader, "{ posts(limit: 1) { items { author } } }")["posts"]["items"][0]
    assert item["author"] == {"_model": "authors", "_id": blog["ann"]["_id"]}


def test_drafts_and_preview_links_as_rest_has_them(admin: Api, blog: dict[str, Any]) -> None:
    one = blog["posts"][0]
    saved = data(admin, 'mutation($id: ID!) { updatePost(id: $id, draft: true, data: {title: "Next title"}) '
                        '{ title } }', id=one["_id"])
    assert saved == {"updatePost": {"title": "Next title"}}
    query = "query($id: ID!, $d: Boolean, $p: String) { post(id: $id, draft: $d, preview: $p) { title } }"
    assert data(admin, query, id=one["_id"]) == {"post": {"title": "Post 1"}}  # the published item
    assert data(admin, query, id=one["_id"], d=True) == {"post": {"title": "Next title"}}
    link = admin.post(f"/api/content/preview/posts/{one['_id']}", json={}).json()
    token = link["token"] if "token" in link else link["url"].rsplit("preview=", 1)[1]
    client = admin.client
    assert data(admin, query, id=one["_id"], p=token) == {"post": {"title": "Next title"}}
    # whoever holds the link, whatever its role (here: none), through previewItem
    anon = client.post("/api/gql", json={"query": 'query($id: String, $t: String!) { previewItem(model: "posts", '
                                                  'id: $id, token: $t) }', "variables": {"id": one["_id"], "t": token}})
    shown = anon.json()["data"]["previewItem"]
    assert shown["title"] == "Next title" and shown["_draft"] is True
    wrong = client.post("/api/gql", json={"query": 'query($id: String) { previewItem(model: "posts", id: $id, '
                                                   'token: "nope") }', "variables": {"id": one["_id"]}})
    assert wrong.json()["data"] == {"previewItem": None} and wrong.json()["errors"]


def test_every_field_type_is_typed_saved_and_read_back(admin: Api) -> None:
    """A field of every built-in type (and multiple ones), written through
    the typed mutation and read back through the typed query."""
    put_model(admin, "tags", type="collection", fields=[{"name": "label", "type": "text"}])
    tag = create_item(admin, "tags", {"label": "news"})
    picture = upload_one(admin, "p.png", solid(4, 4), "image/png")
    fields = [
        {"name": "text", "type": "text"}, {"name": "longtext", "type": "longtext"},
        {"name": "wysiwyg", "type": "wysiwyg"}, {"name": "markdown", "type": "markdown"},
        {"name": "code", "type": "code"}, {"name": "number", "type": "number"}, {"name": "boolean", "type": "boolean"},
        {"name": "date", "type": "date"}, {"name": "datetime", "type": "datetime"}, {"name": "time", "type": "time"},
        {"name": "select", "type": "select", "opts": {"options": ["a", "b"]}},
        {"name": "many", "type": "select", "multiple": True, "opts": {"options": ["a", "b"]}},
        {"name": "tags", "type": "tags"}, {"name": "color", "type": "color"}, {"name": "object", "type": "object"},
        {"name": "set", "type": "set", "opts": {"fields": [{"name": "inner", "type": "number"}]}},
        {"name": "table", "type": "table"}, {"name": "asset", "type": "asset"},
        {"name": "assets", "type": "asset", "multiple": True},
        {"name": "link", "type": "contentItemLink", "opts": {"link": "tags"}},
        {"name": "links", "type": "contentItemLink", "multiple": True, "opts": {"link": "tags"}},
    ]
    put_model(admin, "things", type="collection", fields=fields)
    values = {"text": "t", "longtext": "long\ntext", "wysiwyg": "<p>rich</p>", "markdown": "# md", "code": "x = 1",
              "number": 2.5, "boolean": True, "date": "2026-11-29", "datetime": "2026-11-29T10:00:00Z",
              "time": "10:00", "select": "a", "many": ["a", "b"], "tags": ["x", "y"], "color": "#336699",
              "object": {"k": [1, {"n": None}]}, "set": {"inner": 3}, "table": [{"a": 1}, {"a": 2}],
              "asset": picture["_id"], "assets": [picture["_id"]], "link": tag["_id"], "links": [tag["_id"]]}
    selection = ("_id text longtext wysiwyg markdown code number boolean date datetime time select many tags color "
                 "object set { inner } table asset { _id width } assets { _id } link { label } links { label }")
    made = data(admin, f"mutation($d: ThingInput!) {{ createThing(data: $d, publish: true) {{ {selection} }} }}",
                d=values)["createThing"]
    read = data(admin, f"query($id: ID!) {{ thing(id: $id) {{ {selection} }} }}", id=made["_id"])["thing"]
    assert read == made
    expected = {**values, "set": {"inner": 3}, "asset": {"_id": picture["_id"], "width": 4},
                "assets": [{"_id": picture["_id"]}], "link": {"label": "news"}, "links": [{"label": "news"}]}
    assert {k: v for k, v in read.items() if k != "_id"} == expected
    wrong = admin.post("/api/gql", json={"query": 'mutation { createThing(data: {number: "two"}) { _id } }'})
    assert wrong.status_code == 400 and "Float cannot represent" in wrong.json()["errors"][0]["message"]


def test_a_tree_model_reads_as_a_typed_tree(admin: Api) -> None:
    put_model(admin, "menu", type="tree", fields=[{"name": "label", "type": "text"}])
    about = create_item(admin, "menu", {"label": "About"})
    team = create_item(admin, "menu", {"label": "Team", "_pid": about["_id"]})
    create_item(admin, "menu", {"label": "History", "_pid": team["_id"]})
    create_item(admin, "menu", {"label": "Home"})
    tree = data(admin, "{ menuTree { label children { label children { label } } } }")["menuTree"]
    assert tree == [{"label": "About", "children": [{"label": "Team", "children": [{"label": "History"}]}]},
                    {"label": "Home", "children": []}]
    below = data(admin, "query($p: ID) { menuTree(parent: $p) { label _pid } }", p=about["_id"])["menuTree"]
    assert below == [{"label": "Team", "_pid": about["_id"]}]
    # `menu` is the pages' menu field already: the typed list is `menuContent`
    flat = data(admin, "{ menuContent(sort: {label: 1}) { items { label children { label } } } }")["menuContent"]["items"]
    assert [m["label"] for m in flat] == ["About", "History", "Home", "Team"] and flat[0]["children"] is None


def test_the_fast_path_answers_as_the_executor(admin: Api, blog: dict[str, Any], quire: Quire,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """fast.py answers plain typed queries without graphql-core's executor:
    the same answers, errors included (those it hands back)."""
    from quire.gql import fast, service

    queries = [
        ("{ posts(sort: {rating: -1}, limit: 3) { total next items { _id title rating tags seo { title keywords } "
         "author { name posts { title author { name } } } image { width thumb: image(width: 20) url } } } }", {}),
        ("query($id: ID!, $w: Int) { one: post(id: $id) { title image { image(width: $w) } } settings { sitename } "
         "postsCount n: __typename }", {"id": blog["posts"][1]["_id"], "w": 64}),
        ("query($f: JsonType) { postsCount(filter: $f) }", {"f": {"rating": {"$gt": 2}}}),
        ('{ post(id: "000000000000000000000000") { title } }', {}),
        ("query($l: Int) { posts(limit: $l) { items { title } } }", {"l": "many"}),  # a variable's error
        ('{ posts(filter: "{bad") { items { title } } }', {}),  # a resolver's error
    ]
    fast_answers = [admin.post("/api/gql", json={"query": q, "variables": v}).json() for q, v in queries]
    plans = quire.cache.memo("gql.plans", 1).entries
    assert sum(isinstance(p, fast.Plan) for p in plans.values()) == len(queries)  # every one was planned
    made: list[Any] = []
    monkeypatch.setattr(service.Plan, "make", staticmethod(lambda *a: made.append(a) and None))
    quire.cache.memo("gql.plans", 1).entries.clear()
    slow_answers = [admin.post("/api/gql", json={"query": q, "variables": v}).json() for q, v in queries]
    assert made, "the executor's path was not taken"
    assert fast_answers == slow_answers
    assert fast_answers[0]["data"]["posts"]["items"][0]["author"]["posts"][0]["author"] == {"name": "Ann"}
