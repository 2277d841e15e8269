"""Cursor pages of content lists (`after=`): walking every page by its
cursor gives exactly the list read at once, for any sort; the cursor's
place in the answer (Link header for bare arrays, `meta.next` in the
envelope); cursors of other queries and altered ones are refused."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import Api, create_item, put_model, role_key

LOCALES = [{"i18n": "de", "name": "Deutsch"}]
FIELDS = [
    {"name": "title", "type": "text"},
    {"name": "name", "type": "text", "i18n": True},
    {"name": "views", "type": "number"},
    {"name": "tags", "type": "tags"},
    {"name": "meta", "type": "object"},
]
# duplicates of sort values, nulls, missing fields, arrays and mixed types
ITEMS: list[dict[str, Any]] = [
    {"title": "b", "views": 3, "tags": ["x", "a"], "meta": {"v": 1}, "name_de": "Zebra"},
    {"title": "a", "views": 3, "tags": ["m"], "meta": {"v": "1"}, "name_de": "apfel"},
    {"title": "c", "views": None, "meta": {"v": None}},
    {"title": "a", "tags": [], "meta": {}, "name_de": "Äpfel"},
    {"title": "d", "views": -1.5, "tags": ["b", "z"], "meta": {"v": [2, "b"]}, "name_de": "Birne"},
    {"title": "e", "views": 10, "meta": {"v": True}},
    {"title": "a", "views": 3, "tags": ["m", "n"], "meta": {"v": {"k": 1}}, "name_de": "apfel"},
    {"title": "f", "views": 0, "meta": {"v": 0.5}},
    {"title": "g", "views": 10, "tags": ["a"], "meta": {"v": [0]}, "name_de": "Zebra"},
    {"views": 7, "meta": {"v": "x"}},
]
DRAFTS = [{"title": "hidden", "views": 5, "_state": 0}, {"title": "hidden2", "_state": 0}]
SORTS = [None, {"views": 1}, {"views": -1}, {"title": 1, "views": -1}, {"views": 1, "title": -1},
         {"meta.v": 1}, {"meta.v": -1}, {"tags": 1}, {"tags": -1}, {"name:de": 1}, {"name:de": -1},
         {"title": -1, "meta.v": 1, "tags": -1}]


@pytest.fixture
def posts(admin: Api) -> Api:
    response = admin.put("/api/system/locales", json=LOCALES)
    assert response.status_code == 200, response.text
    put_model(admin, "posts", type="collection", fields=FIELDS)
    for item in ITEMS + DRAFTS:
        create_item(admin, "posts", item)
    return admin


def _ids(api: Api, url: str) -> list[str]:
    response = api.get(url)
    assert response.status_code == 200, response.text
    return [d["_id"] for d in response.json()]


def _walk_links(api: Api, url: str) -> list[str]:
    seen: list[str] = []
    pages = 0
    while True:
        response = api.get(url)
        assert response.status_code == 200, response.text
        seen += [d["_id"] for d in response.json()]
        link = response.headers.get("link")
        if link is None:
            return seen
        match = re.fullmatch(r'<([^>]+)>; rel="next"', link)
        assert match, link
        url = match.group(1)
        pages += 1
        assert pages < 100


def _url(sort: Any, limit: int, extra: str = "") -> str:
    query = f"limit={limit}" + ("" if sort is None else "&sort=" + json.dumps(sort)) + extra
    return f"/api/content/items/posts?{query}"


def test_walking_every_page_by_cursor_gives_the_whole_sorted_list(posts: Api) -> None:
    for sort in SORTS:
        whole = _ids(posts, "/api/content/items/posts" + ("" if sort is None else "?sort=" + json.dumps(sort)))
        assert len(whole) == len(ITEMS)  # published items only
        for size in (1, 2, 3, 20):
            assert _walk_links(posts, _url(sort, size)) == whole, (sort, size)


def test_pages_by_cursor_keep_the_filter_fields_and_locale(posts: Api) -> None:
    extra = '&filter={"views":{"$gte":0}}&fields={"title":1}&locale=de'
    whole = _ids(posts, '/api/content/items/posts?sort={"views":-1}' + extra)
    assert _walk_links(posts, _url({"views": -1}, 2, extra)) == whole
    assert len(whole) == 7


def test_envelope_carries_next_cursor_in_meta_and_none_on_last_page(posts: Api) -> None:
    url = _url({"title": 1}, 4, "&skip=0")
    seen: list[str] = []
    metas = []
    while True:
        body = posts.get(url).json()
        seen += [d["_id"] for d in body["data"]]
        metas.append(body["meta"])
        if "next" not in body["meta"]:
            break
        url = _url({"title": 1}, 4, "&skip=0&after=" + body["meta"]["next"])
    assert seen == _ids(posts, '/api/content/items/posts?sort={"title":1}')
    assert [m["total"] for m in metas] == [len(ITEMS)] * 3
    assert list(metas[-1]) == ["total"]


def test_skip_page_with_envelope_carries_a_cursor_to_the_page_after_it(posts: Api) -> None:
    whole = _ids(posts, "/api/content/items/posts")
    body = posts.get("/api/content/items/posts?limit=3&skip=2").json()
    assert [d["_id"] for d in body["data"]] == whole[2:5]
    after = posts.get("/api/content/items/posts?limit=3&after=" + body["meta"]["next"])
    assert [d["_id"] for d in after.json()] == whole[5:8]


def test_last_bare_page_has_no_link_and_body_is_the_plain_array(posts: Api) -> None:
    full = posts.get("/api/content/items/posts?limit=100")
    assert "link" not in full.headers
    assert full.content.startswith(b"[{") and len(full.json()) == len(ITEMS)
    first = posts.get("/api/content/items/posts?limit=9")
    assert len(first.json()) == 9 and "link" in first.headers
    query = parse_qs(urlsplit(first.headers["link"][1:].split(">")[0]).query)
    assert query["limit"] == ["9"] and len(query["after"]) == 1
    last = posts.get("/api/content/items/posts?limit=9&after=" + query["after"][0])
    assert len(last.json()) == 1 and "link" not in last.headers


def _first_cursor(api: Api, sort: Any = None, extra: str = "") -> str:
    body = api.get(_url(sort, 2, "&skip=0" + extra)).json()
    return str(body["meta"]["next"])


def test_cursor_of_another_query_is_refused(posts: Api) -> None:
    cursor = _first_cursor(posts, {"views": 1})
    for other in ['&sort={"views":-1}', '&filter={"title":"a"}&sort={"views":1}',
                  '&sort={"views":1}&fields={"title":1}', '&sort={"views":1}&locale=de',
                  '&sort={"views":1}&populate=1']:
        response = posts.get(f"/api/content/items/posts?limit=2{other}&after={cursor}")
        assert response.status_code == 400, other
        assert "another query" in response.json()["error"]
    same = posts.get(f'/api/content/items/posts?limit=5&sort={{"views":1}}&after={cursor}')
    assert same.status_code == 200  # another page size is the same query


def test_altered_or_foreign_cursor_is_a_400_naming_it(posts: Api) -> None:
    cursor = _first_cursor(posts)
    body, check = cursor.split(".")
    flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    for bad, words in [(flipped + "." + check, "altered"), ("nonsense", "not a cursor"),
                       ("a.b.c", "not a cursor"), ("é.é", "not a cursor"), ("x" * 50_000, "not a cursor")]:
        response = posts.get(f"/api/content/items/posts?limit=2&after={bad}")
        assert response.status_code == 400, bad
        assert words in response.json()["error"], response.json()


def test_after_needs_a_limit_and_goes_without_skip(posts: Api) -> None:
    cursor = _first_cursor(posts)
    for query in [f"after={cursor}", f"limit=0&after={cursor}", f"limit=0&skip=0&after={cursor}"]:
        response = posts.get(f"/api/content/items/posts?{query}")
        assert response.status_code == 400 and "needs a <limit>" in response.json()["error"], query
    response = posts.get(f"/api/content/items/posts?limit=2&skip=3&after={cursor}")
    assert response.status_code == 400 and "<skip>" in response.json()["error"]


def test_cursor_carries_no_permission_and_pages_show_no_drafts(posts: Api, anon: Api) -> None:
    cursor = _first_cursor(posts)
    refused = anon.get(f"/api/content/items/posts?limit=2&after={cursor}")
    assert refused.status_code in (401, 403)
    reader = role_key(posts, "reader", {"content/posts/read": True})
    walked = _walk_links(reader, "/api/content/items/posts?limit=1")
    assert len(walked) == len(ITEMS)
    titles = [d.get("title") for d in posts.get("/api/content/items/posts").json()]
    assert "hidden" not in titles
    # a draft placed just after a page's end stays out of the next page too
    draft = create_item(posts, "posts", {"title": "late draft", "_state": 0})
    page = reader.get(f"/api/content/items/posts?limit=50&after={cursor}").json()
    assert draft["_id"] not in [d["_id"] for d in page]


def test_batch_envelope_carries_next_cursor(posts: Api) -> None:
    models = {"p": {"model": "posts", "limit": 4, "skip": 0}}
    first = posts.get("/api/content/items?models=" + json.dumps(models)).json()["p"]
    assert len(first["data"]) == 4 and "next" in first["meta"]
    models["p"]["after"] = first["meta"]["next"]
    second = posts.get("/api/content/items?models=" + json.dumps(models)).json()["p"]
    whole = _ids(posts, "/api/content/items/posts")
    assert [d["_id"] for d in first["data"] + second["data"]] == whole[:8]


def test_largest_limit_is_one_page_without_a_cursor(posts: Api) -> None:
    response = posts.get(f"/api/content/items/posts?limit={2**63 - 1}")
    assert response.status_code == 200 and len(response.json()) == len(ITEMS)
    assert "link" not in response.headers


def test_the_next_link_keeps_the_other_parameters_as_sent_and_replaces_after(posts: Api) -> None:
    first = posts.get("/api/content/items/posts", params={"limit": 3, "filter": '{"views": {"$gte": 0}}',
                                                          "sort": '{"views": 1}', "after": ""})
    link = first.headers["link"]
    target = link[1:link.index(">")]
    assert target.startswith("/api/content/items/posts?") and link.endswith('>; rel="next"')
    query = parse_qs(urlsplit(target).query, keep_blank_values=True)
    assert query["limit"] == ["3"] and query["filter"] == ['{"views": {"$gte": 0}}']
    assert query["sort"] == ['{"views": 1}'] and len(query["after"]) == 1 and query["after"][0]
    second = posts.get(target)
    assert second.status_code == 200 and "link" in second.headers
    again = parse_qs(urlsplit(second.headers["link"][1:].split(">")[0]).query)
    assert len(again["after"]) == 1 and again["after"] != query["after"]
    encoded_key = posts.get("/api/content/items/posts?limit=3&aft%65r=")  # `after` spelled encoded: replaced too
    assert parse_qs(urlsplit(encoded_key.headers["link"][1:].split(">")[0]).query).keys() == {"limit", "after"}
