"""The change feed pulled as JSON pages (`GET /api/content/changes?since=`):
every content write in commit order, as each reader's key sees it."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, put_model


def _site(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"},
                                                          {"name": "kind", "type": "text"}])
    put_model(admin, "secrets", type="collection", fields=[{"name": "title", "type": "text"}])
    admin.put("/api/system/roles/public", json={"permissions": {"content/posts/read": True}})


def _pull(api: Api, since: str = "0", **params: Any) -> dict[str, Any]:
    answer = api.get("/api/content/changes", params={"since": since, **params})
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_changes_arrive_in_order_as_the_reader_sees_them(admin: Api, anon: Api) -> None:
    _site(admin)
    start = _pull(anon)["next"]
    one = admin.post("/api/content/item/posts", json={"data": {"title": "One", "_state": 1}}).json()
    draft = admin.post("/api/content/item/posts", json={"data": {"title": "Draft", "_state": 0}}).json()
    admin.post("/api/content/item/secrets", json={"data": {"title": "Hidden", "_state": 1}})
    admin.post("/api/content/item/posts", json={"data": {"_id": one["_id"], "title": "One again"}})
    page = _pull(anon, start)
    assert [(c["change"], c["id"]) for c in page["data"]] == [("save", one["_id"])]  # once, as it is now
    assert page["data"][0]["item"]["title"] == "One again" and page["data"][0]["model"] == "posts"
    assert page["data"][0]["who"]["kind"] in ("key", "user")
    assert _pull(anon, page["next"])["data"] == []  # nothing new: the same token comes back
    assert _pull(anon, page["next"])["next"] == page["next"]
    admin.delete(f"/api/content/item/posts/{one['_id']}")
    admin.delete(f"/api/content/item/posts/{draft['_id']}")
    gone = _pull(anon, page["next"])
    assert [(c["change"], c["id"]) for c in gone["data"]] == [("remove", one["_id"])]  # a draft was never seen
    every = _pull(admin, start)  # the admin's key reads both models
    assert {c["model"] for c in every["data"]} == {"posts", "secrets"}


def test_an_item_leaving_the_filter_or_unpublished_arrives_as_a_removal(admin: Api, anon: Api) -> None:
    _site(admin)
    start = _pull(anon)["next"]
    item = admin.post("/api/content/item/posts", json={"data": {"title": "A", "kind": "news", "_state": 1}}).json()
    news = {"filter": '{"kind": "news"}'}
    first = _pull(anon, start, **news)
    assert [c["change"] for c in first["data"]] == ["save"]
    admin.post("/api/content/item/posts", json={"data": {"_id": item["_id"], "kind": "blog"}})
    left = _pull(anon, first["next"], **news)
    assert [(c["change"], c["id"]) for c in left["data"]] == [("remove", item["_id"])]
    admin.post("/api/content/item/posts", json={"data": {"_id": item["_id"], "kind": "news", "_state": 0}})
    assert [c["change"] for c in _pull(anon, left["next"], **news)["data"]] == ["remove"]


def test_pages_of_changes_follow_each_other_without_gaps(admin: Api, anon: Api) -> None:
    _site(admin)
    start = _pull(anon)["next"]
    made = [admin.post("/api/content/item/posts", json={"data": {"title": f"P{n}", "_state": 1}}).json()["_id"]
            for n in range(7)]
    seen, token = [], start
    for _ in range(10):
        page = _pull(anon, token, limit=3)
        seen += [c["id"] for c in page["data"]]
        if page["next"] == token:
            break
        token = page["next"]
    assert seen == made


def test_bad_requests_are_refused_naming_the_problem(admin: Api, anon: Api) -> None:
    _site(admin)
    cases = [({"since": "abc"}, 400, "since"), ({"since": "\u0661"}, 400, "since"), ({"since": "-1"}, 400, "since"), ({"limit": "0"}, 400, "limit"),
             ({"limit": "5000"}, 400, "limit"), ({"models": "secrets"}, 401, ""), ({"models": "nope"}, 404, ""),
             ({"filter": "{bad"}, 400, "filter"), ({"filter": '{"$where": "1"}'}, 400, ""),
             ({"models": ","}, 400, "models")]
    for params, status, says in cases:
        answer = anon.get("/api/content/changes", params=params)
        assert answer.status_code == status, (params, answer.text)
        assert says in answer.json()["error"], (params, answer.text)


def test_items_come_as_the_rest_list_answers_them_projected_and_localized(admin: Api, anon: Api) -> None:
    _site(admin)
    start = _pull(anon)["next"]
    admin.post("/api/content/item/posts", json={"data": {"title": "T", "kind": "k", "_state": 1}})
    page = _pull(anon, start, fields='{"title": 1}')
    item = page["data"][0]["item"]
    assert set(item) == {"_id", "title"}
    assert _pull(anon, start, fields='{"_id": 0, "kind": 0}')["data"][0]["item"]["_id"] == item["_id"]
    assert anon.get("/api/content/changes", params={"fields": "{bad"}).status_code == 400


def test_pages_menus_assets_and_translations_are_in_the_same_feed(admin: Api, anon: Api) -> None:
    from tests.assets.helpers import png_of_zeros, upload_one

    _site(admin)
    start = _pull(admin)["next"]
    page = admin.post("/api/pages/page", json={"data": {"type": "layout", "title": "About", "_state": 1}}).json()
    draft = admin.post("/api/pages/page", json={"data": {"type": "layout", "title": "Soon", "_state": 0}}).json()
    assert admin.post("/api/pages/menu", json={"data": {"name": "main", "links": [
        {"title": "About", "url": f"pages://{page['_id']}"}]}}).status_code == 200
    asset = upload_one(admin, "dot.png", png_of_zeros(2, 2), "image/png")
    assert admin.put("/api/l10n/project/site", json={"locales": ["en"], "keys": {"hi": {"en": "Hi"}}}
                     ).status_code == 200
    got = {(c["model"], c["id"]): c for c in _pull(admin, start)["data"]}
    assert got[("@pages", page["_id"])]["item"]["title"] == "About"
    assert ("@pages", draft["_id"]) not in got  # an unpublished page is in no reader's view
    assert got[("@menus", "main")]["item"]["links"][0]["title"] == "About"
    assert got[("@assets", asset["_id"])]["item"]["mime"] == "image/png"
    assert got[("@translations", "site")]["item"] == {"hi": {"en": "Hi"}}  # as the project's GET answers it
    only = _pull(admin, start, models="@pages,posts")["data"]
    assert {c["model"] for c in only} == {"@pages"}
    assert anon.get("/api/content/changes", params={"models": "@pages"}).status_code == 401  # no pages/read
    assert anon.get("/api/content/changes", params={"models": "@nope"}).status_code == 404
    assert {c["model"] for c in _pull(anon, start)["data"]} <= {"posts"}  # what the public role reads
    admin.delete(f"/api/pages/page/{page['_id']}")
    admin.delete("/api/pages/menu/main")
    admin.delete(f"/api/assets/{asset['_id']}")
    admin.delete("/api/l10n/project/site")
    gone = {(c["model"], c["id"], c["change"]) for c in _pull(admin, start)["data"]}
    assert {("@pages", page["_id"], "remove"), ("@menus", "main", "remove"), ("@assets", asset["_id"], "remove"),
            ("@translations", "site", "remove")} <= gone


def test_a_filter_that_matches_nothing_sends_no_item_and_moves_on(admin: Api, anon: Api) -> None:
    _site(admin)
    start = _pull(anon)["next"]
    for n in range(3):
        admin.post("/api/content/item/posts", json={"data": {"title": f"T{n}", "kind": "news", "_state": 1}})
    page = _pull(anon, start, filter='{"kind": "never"}')
    # published items outside the filter that changed: "drop it if you have it", never the item
    assert {c["change"] for c in page["data"]} == {"remove"} and all("item" not in c for c in page["data"])
    assert int(page["next"]) > int(start)  # read past them: not asked again
    assert _pull(anon, page["next"], filter='{"kind": "never"}')["data"] == []
