"""Indexes follow content in the content write's transaction: creates,
updates, publishing, unpublishing, deletes, the index filter, trees, model
deletion, bundle imports, rejected writes, concurrent writes and rebuilds
running alongside writes."""

from __future__ import annotations

import contextvars
import logging
import threading
from typing import Any

import anyio
import pytest

from quire.app import Quire
from quire.bundle import import_bundle
from quire.errors import StoreUnavailable
from quire.events import Events, Reject
from quire.searchmod import service as search_service
from tests.conftest import Api, create_item, put_model, role_key
from tests.searchmod.helpers import (
    ADMIN,
    error_of,
    get_index,
    ids,
    posts_model,
    put_index,
    search,
    update,
)


@pytest.fixture
def posts(admin: Api) -> Api:
    """Model `posts` with index `ix` over title and body, filter category news."""
    posts_model(admin)
    put_index(admin, "ix", model="posts", fields=["title", "body"], filter={"category": "news"})
    return admin


def hits(admin: Api, q: str, index: str = "ix") -> list[str]:
    return ids(search(admin, index, q, limit=1000))


def documents(admin: Api, index: str = "ix") -> int:
    return int(get_index(admin, index)["documents"])


# -- create, update, delete -----------------------------------------------------


def test_a_created_item_is_searchable_at_once(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Fresh news", "body": "<p>hot off the press</p>", "category": "news"})
    assert hits(posts, "fresh") == [item["_id"]]
    assert hits(posts, "press") == [item["_id"]]
    assert documents(posts) == 1


def test_an_update_replaces_the_document(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Old headline", "category": "news"})
    update(posts, "posts", item["_id"], {"title": "New headline"})
    assert hits(posts, "old") == []
    assert hits(posts, "new") == [item["_id"]]
    hit = search(posts, "ix", "headline")["hits"][0]
    assert hit["title"] == "New headline"
    assert search(posts, "ix", "headline")["total"] == 1 and documents(posts) == 1


def test_an_update_of_other_fields_keeps_the_document(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Steady title", "category": "news", "n": 1})
    update(posts, "posts", item["_id"], {"n": 2, "slug": "steady"})
    assert hits(posts, "steady") == [item["_id"]]
    assert search(posts, "ix", "steady")["hits"][0]["title"] == "Steady title"


def test_a_deleted_item_leaves_the_index(posts: Api) -> None:
    gone = create_item(posts, "posts", {"title": "Vanishing act", "category": "news"})
    kept = create_item(posts, "posts", {"title": "Vanishing point", "category": "news"})
    assert posts.delete(f"/api/content/item/posts/{gone['_id']}").json() == {"success": True}
    assert hits(posts, "vanishing") == [kept["_id"]]
    assert search(posts, "ix", "vanishing")["total"] == 1 and documents(posts) == 1


def test_drafts_are_never_indexed_and_publishing_adds_them(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Secret plan", "category": "news", "_state": 0})
    assert hits(posts, "secret") == [] and documents(posts) == 0
    update(posts, "posts", item["_id"], {"title": "Secret plan revised"})
    assert hits(posts, "secret") == []  # still a draft
    update(posts, "posts", item["_id"], {"_state": 1})
    assert hits(posts, "revised") == [item["_id"]]


@pytest.mark.parametrize("state", [0, -1])
def test_unpublishing_or_archiving_removes_the_document(posts: Api, state: int) -> None:
    item = create_item(posts, "posts", {"title": "Public notice", "category": "news"})
    update(posts, "posts", item["_id"], {"_state": state})
    assert hits(posts, "notice") == [] and documents(posts) == 0
    update(posts, "posts", item["_id"], {"_state": 1})
    assert hits(posts, "notice") == [item["_id"]]


def test_items_enter_and_leave_with_the_index_filter(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Drifting story", "category": "blog"})
    assert hits(posts, "drifting") == []
    update(posts, "posts", item["_id"], {"category": "news"})
    assert hits(posts, "drifting") == [item["_id"]]
    update(posts, "posts", item["_id"], {"category": "blog", "title": "Drifting story 2"})
    assert hits(posts, "drifting") == [] and documents(posts) == 0


def test_filters_with_operators_are_followed(admin: Api) -> None:
    posts_model(admin)
    put_index(admin, "big", model="posts", fields=["title"], filter={"n": {"$gte": 10}, "tags": {"$in": ["x"]}})
    item = create_item(admin, "posts", {"title": "counter", "n": 5, "tags": ["x", "y"]})
    assert hits(admin, "counter", "big") == []
    update(admin, "posts", item["_id"], {"n": 10})
    assert hits(admin, "counter", "big") == [item["_id"]]
    update(admin, "posts", item["_id"], {"tags": ["y"]})
    assert hits(admin, "counter", "big") == []


def test_every_index_of_the_model_follows_and_others_do_not(admin: Api) -> None:
    posts_model(admin)
    put_model(admin, "pages", type="collection", fields=[{"name": "title", "type": "text"}])
    put_index(admin, "all", model="posts", fields=["title"])
    put_index(admin, "slugs", model="posts", fields=["slug"])
    put_index(admin, "pages", model="pages", fields=["title"])
    item = create_item(admin, "posts", {"title": "shared word", "slug": "shared-slug"})
    assert hits(admin, "shared", "all") == [item["_id"]]
    assert hits(admin, "shared", "slugs") == [item["_id"]]
    assert hits(admin, "shared", "pages") == [] and documents(admin, "pages") == 0
    admin.delete(f"/api/content/item/posts/{item['_id']}")
    assert documents(admin, "all") == 0 and documents(admin, "slugs") == 0


def test_a_content_write_without_search_permissions_still_updates_the_index(posts: Api) -> None:
    writer = role_key(posts, "writer", {"content/posts/create": True, "content/posts/update": True,
                                        "content/posts/delete": True})
    response = writer.post("/api/content/item/posts", json={"data": {"title": "Writer wrote", "category": "news"}})
    assert response.status_code == 200, response.text
    item_id = response.json()["_id"]
    assert hits(posts, "wrote") == [item_id]
    assert writer.delete(f"/api/content/item/posts/{item_id}").status_code == 200
    assert hits(posts, "wrote") == []


# -- rich text, arrays and objects ------------------------------------------------


def test_rich_text_arrays_and_objects_are_indexed_as_text(admin: Api) -> None:
    posts_model(admin)
    put_index(admin, "ix", model="posts", fields=["title", "body", "tags", "meta", "n"])
    body = ("<h1>Heading</h1><p>First<br>second&nbsp;third &lt;tagged&gt; <strong>bold</strong></p>"
            "<script>var scriptword = 1;</script><style>.styleword {}</style>"
            "<img src='img.png' alt='Alttext'><a href='https://hrefword.example' class='classword'>linked</a>"
            "<ul><li>one</li><li>two</li></ul>")
    meta = {"a": {"b": ["deepword", {"c": "deeper"}], "num": 42.5}, "flag": True, "_hidden": "underscored",
            "list": [["nested", "lists"]]}
    item = create_item(admin, "posts", {"title": "Rich", "body": body, "tags": ["tagone", "tag two"],
                                        "meta": meta, "n": 1234})
    for q in ["heading", "first", "second", "third", "tagged", "bold", "alttext", "linked", "one", "two", "lists",
              "tagone", "deepword", "deeper", "42", "nested", "lists", "1234", "firs", "headin"]:
        assert hits(admin, q) == [item["_id"]], q
    for q in ["scriptword", "styleword", "hrefword", "classword", "strong", "nbsp", "lt", "h1", "ul",
              "underscored", "true", "flag", "img", "png"]:
        assert hits(admin, q) == [], q
    hit = search(admin, "ix", "deepword")["hits"][0]
    # the stored body: rich text is cleaned on save (its <script> and <style> are gone)
    assert hit["body"] == item["body"] and "<script" not in item["body"]
    assert hit["meta"] == meta and hit["tags"] == ["tagone", "tag two"]
    assert hit["n"] == 1234


def test_words_split_by_markup_stay_apart(admin: Api) -> None:
    posts_model(admin)
    put_index(admin, "ix", model="posts", fields=["body"])
    item = create_item(admin, "posts", {"body": "<p>north</p><p>pole</p><div>east</div>wind"})
    assert hits(admin, '"north pole"') == [item["_id"]]
    assert hits(admin, "northpole") == [] and hits(admin, "eastwind") == []


# -- locales --------------------------------------------------------------------


@pytest.fixture
def localized(admin: Api) -> dict[str, str]:
    response = admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"},
                                                      {"i18n": "fr", "name": "Français"}])
    assert response.status_code == 200, response.text
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text", "i18n": True},
        {"name": "body", "type": "wysiwyg", "i18n": True},
        {"name": "slug", "type": "text"},
    ])
    made = {
        "house": create_item(admin, "posts", {"title": "House", "title_de": "Haus", "title_fr": "Maison",
                                              "body": "<p>big garden</p>", "body_de": "<p>großer Garten</p>",
                                              "slug": "house"})["_id"],
        "tree": create_item(admin, "posts", {"title": "Tree", "title_de": "", "body": "<p>tall tree</p>",
                                             "slug": "tree"})["_id"],
    }
    put_index(admin, "ix", model="posts", fields=["title", "body", "slug"], locales=["de"])
    return made


def test_locale_searches_the_localized_values(admin: Api, localized: dict[str, str]) -> None:
    result = search(admin, "ix", "haus", locale="de")
    assert ids(result) == [localized["house"]] and result["total"] == 1
    hit = result["hits"][0]
    assert hit["title"] == "Haus" and hit["body"] == "<p>großer Garten</p>" and hit["slug"] == "house"
    assert search(admin, "ix", "garten", locale="de")["total"] == 1
    assert search(admin, "ix", "big", locale="de")["total"] == 0  # body_de replaces body
    assert search(admin, "ix", "big")["total"] == 1
    assert search(admin, "ix", "haus")["total"] == 0  # the default locale has no Haus
    assert search(admin, "ix", "house")["hits"][0]["title"] == "House"


def test_a_missing_or_empty_localized_value_falls_back_to_the_default(admin: Api, localized: dict[str, str]) -> None:
    hit = search(admin, "ix", "tree", locale="de")["hits"][0]
    assert hit["_id"] == localized["tree"] and hit["title"] == "Tree" and hit["body"] == "<p>tall tree</p>"


def test_non_localized_fields_are_searchable_in_every_locale(admin: Api, localized: dict[str, str]) -> None:
    hit = search(admin, "ix", "house", locale="de")["hits"][0]  # the slug
    assert hit["_id"] == localized["house"] and hit["title"] == "Haus"


@pytest.mark.parametrize("locale", ["fr", "xx", "default", "DE", ""])
def test_a_locale_the_index_does_not_have_answers_default_documents(admin: Api, localized: dict[str, str],
                                                                    locale: str) -> None:
    result = search(admin, "ix", "house", locale=locale)
    assert ids(result) == [localized["house"]]
    assert result["hits"][0]["title"] == "House"
    assert search(admin, "ix", "maison", locale=locale)["total"] == 0
    assert search(admin, "ix", "haus", locale=locale)["total"] == 0


def test_each_item_is_counted_once_per_locale(admin: Api, localized: dict[str, str]) -> None:
    for locale in (None, "de", "fr"):
        for q in ("h", "t", "house", "tree", "g"):
            result = search(admin, "ix", q, locale=locale, limit=100)
            assert len(ids(result)) == len(set(ids(result))) == result["total"], (locale, q)
    assert search(admin, "ix", "tree", locale="de")["total"] == 1
    assert get_index(admin, "ix")["documents"] == 2


def test_locale_filter_and_highlight_use_the_localized_values(admin: Api, localized: dict[str, str]) -> None:
    assert ids(search(admin, "ix", "house", locale="de", filter='{"title": "Haus"}')) == [localized["house"]]
    assert search(admin, "ix", "house", locale="de", filter='{"title": "House"}')["total"] == 0
    hit = search(admin, "ix", "garten", locale="de", highlight="1")["hits"][0]
    assert hit["_formatted"]["body"] == "großer <mark>Garten</mark>"
    assert hit["_formatted"]["title"] == "Haus"


def test_localized_values_follow_updates(admin: Api, localized: dict[str, str]) -> None:
    update(admin, "posts", localized["tree"], {"title_de": "Baum"})
    assert ids(search(admin, "ix", "baum", locale="de")) == [localized["tree"]]
    assert search(admin, "ix", "baum")["total"] == 0
    # body_de is empty: the de document keeps the default body
    assert search(admin, "ix", "tall", locale="de")["hits"][0]["title"] == "Baum"
    assert search(admin, "ix", "tall")["hits"][0]["title"] == "Tree"


# -- trees ----------------------------------------------------------------------


def test_a_tree_index_loses_the_whole_deleted_subtree(admin: Api) -> None:
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    root = create_item(admin, "nav", {"label": "root branch"})
    child = create_item(admin, "nav", {"label": "child branch", "_pid": root["_id"]})
    create_item(admin, "nav", {"label": "grandchild branch", "_pid": child["_id"]})
    other = create_item(admin, "nav", {"label": "other branch"})
    put_index(admin, "nav", model="nav", fields=["label"])
    assert search(admin, "nav", "branch")["total"] == 4
    assert admin.delete(f"/api/content/item/nav/{root['_id']}").status_code == 200
    assert hits(admin, "branch", "nav") == [other["_id"]]
    assert documents(admin, "nav") == 1


# -- model deletion -----------------------------------------------------------------


def test_deleting_the_model_empties_its_indexes(admin: Api) -> None:
    posts_model(admin)
    put_model(admin, "pages", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "ephemeral"})
    page = create_item(admin, "pages", {"title": "ephemeral page"})
    put_index(admin, "ix", model="posts", fields=["title"])
    put_index(admin, "pages", model="pages", fields=["title"])
    assert admin.delete("/api/system/models/posts").status_code == 200
    assert documents(admin, "ix") == 0
    assert search(admin, "ix", "ephemeral") == {"hits": [], "total": 0, "query": "ephemeral", "limit": 50,
                                                "offset": 0}
    assert hits(admin, "ephemeral", "pages") == [page["_id"]]  # other models' indexes are untouched
    # a model of the same name made again is followed again
    posts_model(admin)
    again = create_item(admin, "posts", {"title": "ephemeral again"})
    assert hits(admin, "ephemeral") == [again["_id"]]


# -- bundle import ------------------------------------------------------------------


def _bundle(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"quire": 1, "items": {"posts": items}}


@pytest.mark.anyio
async def test_a_bundle_import_updates_the_indexes(admin: Api, quire: Quire) -> None:
    posts_model(admin)
    put_index(admin, "ix", model="posts", fields=["title"])
    a, b, c = "a" * 24, "b" * 24, "c" * 24
    counts = await import_bundle(quire, _bundle([
        {"_id": a, "title": "imported alpha", "_state": 1, "_created": 1},
        {"_id": b, "title": "imported draft", "_state": 0, "_created": 2},
        {"_id": c, "title": "imported gamma", "_state": 1, "_created": 3},
    ]))
    assert counts["items"] == 3
    assert sorted(hits(admin, "imported")) == [a, c]
    assert documents(admin) == 2
    await import_bundle(quire, _bundle([
        {"_id": a, "title": "reimported alpha", "_state": 1},
        {"_id": b, "title": "published draft", "_state": 1},
        {"_id": c, "title": "imported gamma", "_state": 0},
    ]))
    assert hits(admin, "reimported") == [a]
    assert hits(admin, "published") == [b]
    assert hits(admin, "gamma") == []
    assert documents(admin) == 2


@pytest.mark.anyio
async def test_a_failed_bundle_import_leaves_the_index_unchanged(admin: Api, quire: Quire) -> None:
    posts_model(admin)
    kept = create_item(admin, "posts", {"title": "original"})
    put_index(admin, "ix", model="posts", fields=["title", "n"])
    with pytest.raises(Exception, match="n must be a number"):
        await import_bundle(quire, _bundle([
            {"_id": kept["_id"], "title": "overwritten", "_state": 1},
            {"_id": "d" * 24, "title": "newcomer", "_state": 1},
            {"_id": "e" * 24, "title": "broken", "n": "not a number", "_state": 1},
        ]))
    assert hits(admin, "original") == [kept["_id"]]
    assert hits(admin, "overwritten") == [] and hits(admin, "newcomer") == []
    assert documents(admin) == 1


# -- the same transaction as the content write ---------------------------------------


def test_the_index_catches_up_right_after_the_commit(posts: Api, quire: Quire, events: Events) -> None:
    seen: dict[str, int] = {}

    def saved(model: str, item: dict[str, Any], **_: Any) -> None:
        # inside the write's transaction: queued, not written (the write may still roll back)
        seen["saved"] = quire.search.search("ix", {"q": "inside"}, ADMIN)["total"]

    def after(model: str, item: dict[str, Any], **_: Any) -> None:
        seen["after"] = quire.search.search("ix", {"q": "inside"}, ADMIN)["total"]

    events.on("content.item.saved", saved)
    events.on("content.item.save.after", after)
    create_item(posts, "posts", {"title": "inside job", "category": "news"})
    assert seen == {"saved": 0, "after": 1}


def test_a_reject_from_a_saved_handler_cancels_the_write_and_the_index_change(posts: Api, events: Events) -> None:
    item = create_item(posts, "posts", {"title": "Original words", "category": "news"})

    def veto(model: str, item: dict[str, Any], **_: Any) -> None:
        if "forbidden" in (item.get("title") or ""):
            raise Reject("No forbidden words")

    events.on("content.item.saved", veto)
    response = posts.post("/api/content/item/posts", json={"data": {"_id": item["_id"], "title": "forbidden update"}})
    assert error_of(response, 412) == "No forbidden words"
    assert posts.get(f"/api/content/item/posts/{item['_id']}").json()["title"] == "Original words"
    assert hits(posts, "forbidden") == []
    assert hits(posts, "original") == [item["_id"]]
    # a rejected unpublish leaves the document too
    response = posts.post("/api/content/item/posts",
                          json={"data": {"_id": item["_id"], "title": "forbidden", "_state": 0}})
    assert response.status_code == 412
    assert hits(posts, "original") == [item["_id"]]
    # a rejected create stores nothing and indexes nothing
    response = posts.post("/api/content/item/posts", json={"data": {"title": "forbidden new", "category": "news"}})
    assert error_of(response, 412) == "No forbidden words"
    assert posts.get("/api/content/items/posts").json() == [posts.get(f"/api/content/item/posts/{item['_id']}").json()]
    assert hits(posts, "new") == [] and documents(posts) == 1


def test_a_reject_from_a_remove_handler_keeps_the_document(posts: Api, events: Events) -> None:
    item = create_item(posts, "posts", {"title": "Protected", "category": "news"})

    def veto(**_: Any) -> None:
        raise Reject("Protected item")

    events.on("content.item.remove", veto)
    assert error_of(posts.delete(f"/api/content/item/posts/{item['_id']}"), 412) == "Protected item"
    assert hits(posts, "protected") == [item["_id"]]


def test_a_failing_saved_handler_rolls_back_the_index_too(posts: Api, events: Events) -> None:
    item = create_item(posts, "posts", {"title": "Stable", "category": "news"})

    def boom(**_: Any) -> None:
        raise RuntimeError("handler crashed")

    events.on("content.item.saved", boom)
    response = posts.post("/api/content/item/posts", json={"data": {"_id": item["_id"], "title": "Unstable"}})
    assert error_of(response, 500) == "Internal server error"
    events.off("content.item.saved", boom)
    assert hits(posts, "stable") == [item["_id"]] and hits(posts, "unstable") == []


# -- concurrency ----------------------------------------------------------------------


def _assert_index_matches_content(admin: Api, quire: Quire) -> None:
    """Every published item is found by its unique token with its current
    values, and nothing else is in the index."""
    items = [i for i in quire.content.collection(quire.models.get("posts")).find() if i.get("_state") == 1]
    for item in items:
        result = search(admin, "ix", item["slug"])
        assert ids(result) == [item["_id"]], item
        assert result["hits"][0]["title"] == item["title"]
    assert documents(admin) == len(items)
    assert search(admin, "ix", "common", limit=1000)["total"] == len(items)


@pytest.mark.anyio
async def test_concurrent_saves_leave_the_index_consistent(admin: Api, quire: Quire, events: Events) -> None:
    posts_model(admin)
    put_index(admin, "ix", model="posts", fields=["title", "slug"])

    async def yield_inside(**_: Any) -> None:
        await anyio.sleep(0)  # other writers start and wait while this transaction is open

    events.on("content.item.save.before", yield_inside)
    created: list[str] = []

    async def create(i: int) -> None:
        item = await quire.content.save("posts", {"title": f"common v0 {i}", "slug": f"tok{i}x"}, ADMIN)
        created.append(item["_id"])

    async with anyio.create_task_group() as tg:
        for i in range(12):
            tg.start_soon(create, i)
    assert len(created) == 12

    async def edit(item_id: str, round_: int) -> None:
        state = 0 if round_ == 2 and item_id in created[:3] else 1
        await quire.content.save("posts", {"_id": item_id, "title": f"common v{round_}", "_state": state}, ADMIN)

    async def remove(item_id: str) -> None:
        await quire.content.delete("posts", item_id, ADMIN)

    for round_ in (1, 2):
        async with anyio.create_task_group() as tg:
            for item_id in created[:10]:
                tg.start_soon(edit, item_id, round_)
            if round_ == 2:
                tg.start_soon(remove, created[10])
    _assert_index_matches_content(admin, quire)
    assert search(admin, "ix", "v0")["total"] == 1  # only created[11] was never edited
    assert search(admin, "ix", "v1")["total"] == 0
    assert search(admin, "ix", "v2")["total"] == 7


def test_concurrent_http_writes_from_threads_leave_the_index_consistent(admin: Api, quire: Quire) -> None:
    posts_model(admin)
    put_index(admin, "ix", model="posts", fields=["title", "slug"])
    made = [create_item(admin, "posts", {"title": "common start", "slug": f"tok{i}x"}) for i in range(6)]
    errors: list[str] = []

    def worker(n: int) -> None:
        for round_ in range(4):
            target = made[(n + round_) % len(made)]
            response = admin.post("/api/content/item/posts",
                                  json={"data": {"_id": target["_id"], "title": f"common w{n} r{round_}"}})
            if response.status_code != 200:
                errors.append(response.text)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    _assert_index_matches_content(admin, quire)
    assert search(admin, "ix", "start")["total"] == 0  # every item was edited at least once


@pytest.mark.anyio
async def test_a_rebuild_keeps_serving_and_keeps_writes_made_meanwhile(admin: Api, quire: Quire,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_service, "CHUNK", 2)
    posts_model(admin)
    made = [create_item(admin, "posts", {"title": f"common item{i}", "slug": f"tok{i}x"})["_id"] for i in range(9)]
    put_index(admin, "ix", model="posts", fields=["title", "slug"])
    log: list[str] = []
    totals: list[int] = []
    real_docs, real_drop = quire.search._item_docs, quire.search.engine.drop
    in_writer: contextvars.ContextVar[bool] = contextvars.ContextVar("in_writer", default=False)

    def item_docs(*args: Any) -> Any:
        if not in_writer.get():  # the writer task catches up too: only count the rebuild's
            log.append("build")
        return real_docs(*args)

    def drop(name: str, keep: int | None = None) -> None:
        log.append("end")  # the new generation was switched in
        real_drop(name, keep)

    monkeypatch.setattr(quire.search, "_item_docs", item_docs)
    monkeypatch.setattr(quire.search.engine, "drop", drop)

    async def writer() -> None:
        in_writer.set(True)
        async with quire.store.atomic():  # hold the lock: the rebuild starts waiting behind it
            await anyio.sleep(0)
        for step in range(8):
            if step == 3:
                await quire.content.save("posts", {"title": "common newcomer", "slug": "toknewx"}, ADMIN)
            elif step == 5:
                await quire.content.save("posts", {"_id": made[0], "_state": 0}, ADMIN)
            else:
                await quire.content.save("posts", {"_id": made[step], "title": f"common changed{step}"}, ADMIN)
            log.append("save")
            totals.append(quire.search.search("ix", {"q": "common", "limit": 1}, ADMIN)["total"])

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        tg.start_soon(quire.search.rebuild, "ix", ADMIN)
    # the writes really ran between the chunks of the rebuild
    first_build, end = log.index("build"), log.index("end")
    assert "save" in log[first_build:end], log
    assert log.count("end") == 1
    # searches during the rebuild answered every document (the old generation serves until the end)
    during = log[:end].count("save")
    assert during >= 2 and all(t >= 9 for t in totals[:during]), (log, totals)
    _assert_index_matches_content(admin, quire)
    assert hits(admin, "newcomer") != [] and hits(admin, "tok0x") == []


def test_an_outage_is_one_warning_line_and_one_when_it_ends(posts: Api, quire: Quire,
                                                             caplog: pytest.LogCaptureFixture,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The poller tries every 0.3 s: while the database is away each try
    fails, and is not logged again (nor with a traceback) until it is back."""
    create_item(posts, "posts", {"title": "queued", "category": "news"})
    real = quire.search.follower.catch_up

    def away(*_: Any) -> None:
        raise StoreUnavailable("The database cannot be reached; try again shortly", retry_after=1)

    monkeypatch.setattr(quire.search.follower, "pending", lambda: True)
    monkeypatch.setattr(quire.search.follower, "catch_up", away)
    with caplog.at_level(logging.INFO, logger="quire.search"):
        for _ in range(20):
            quire.search._catch_up("")
        monkeypatch.setattr(quire.search.follower, "catch_up", real)
        quire.search._catch_up("")
        quire.search._catch_up("")
    lines = [r for r in caplog.records if r.name.startswith("quire.search")]
    assert [r.levelname for r in lines] == ["WARNING", "WARNING"]
    assert "unavailable" in lines[0].getMessage() and "answers again" in lines[1].getMessage()
    assert not any(r.exc_info for r in lines)
    assert hits(posts, "queued") == [next(iter(quire.store.collection("content/posts").find()))["_id"]]


def test_a_burst_of_writes_shares_catch_up_rounds_and_searches_still_find_every_write(
        posts: Api, quire: Quire, monkeypatch: pytest.MonkeyPatch) -> None:
    rounds: list[int] = []
    real = quire.search.follower.catch_up

    def counted(only: str | None = None) -> None:
        rounds.append(1)
        real(only)

    monkeypatch.setattr(search_service, "CATCH_UP_EVERY", 3600.0)  # a burst: every commit within it
    monkeypatch.setattr(quire.search.follower, "catch_up", counted)
    made = [create_item(posts, "posts", {"title": f"burst walrus {n}", "category": "news"})["_id"] for n in range(20)]
    assert len(rounds) <= 1  # the first commit's round at most (none if one ran just before)
    assert sorted(hits(posts, "walrus")) == sorted(made)  # a search catches up first
    assert documents(posts) == 20
