"""Content lists over HTTP: the table with its total, sort, search (with
and without a search index), the Mongo filter and its inline error, pages,
columns remembered per user, batch publish/unpublish/delete with their
permissions, singletons going to their editor, and tree moves."""

from __future__ import annotations

import re
from typing import Any

from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, page_csrf, post_form

POSTS = [{"name": "title", "type": "text"}, {"name": "views", "type": "number"},
         {"name": "kind", "type": "select", "opts": {"options": ["news", "guide"]}}]


def _posts(admin: Api, count: int = 5) -> list[dict[str, Any]]:
    put_model(admin, "posts", type="collection", fields=POSTS, indexes=["views"])
    return [create_item(admin, "posts", {"title": f"Post {n}", "views": (n * 7) % 10, "kind": "news"})
            for n in range(count)]


def _titles(html: str) -> list[str]:
    return re.findall(r'<th scope="row"><a href="/studio/content/posts/item/[0-9a-f]+">([^<]*)</a>', html)


def _state(admin: Api, item_id: str) -> int | None:
    found = admin.get("/api/content/items/posts", params={"filter": f'{{"_id": "{item_id}"}}'}).json()
    return found[0]["_state"] if found else None


def _roles(admin: Api) -> None:
    admin.put("/api/system/roles/reader", json={"permissions": {"content/posts/read": True}})
    admin.put("/api/system/roles/editor", json={"permissions": {
        "content/posts/read": True, "content/posts/create": True, "content/posts/update": True,
        "content/posts/publish": True}})


def test_list_shows_items_with_the_total_and_links(app: Any, admin: Api) -> None:
    items = _posts(admin, 3)
    ann = logged_in(app)
    page = ann.get("/studio/content/posts")
    assert page.status_code == 200
    assert _titles(page.text) == ["Post 0", "Post 1", "Post 2"]  # creation order by default
    assert "1–3 of 3" in page.text
    assert f'href="/studio/content/posts/item/{items[0]["_id"]}"' in page.text
    assert 'href="/studio/content/posts/item"' in page.text  # New item
    assert 'name="ids"' in page.text and 'value="publish"' in page.text and 'value="delete"' in page.text


def test_sort_by_a_column_both_ways(app: Any, admin: Api) -> None:
    _posts(admin, 5)  # views: 0 7 4 1 8
    ann = logged_in(app)
    page = ann.get("/studio/content/posts?sort=views")
    assert _titles(page.text) == ["Post 0", "Post 3", "Post 2", "Post 1", "Post 4"]
    assert 'aria-sort="ascending"' in page.text
    assert 'href="/studio/content/posts?sort=-views"' in page.text  # clicking again turns it round
    page = ann.get("/studio/content/posts?sort=-views")
    assert _titles(page.text) == ["Post 4", "Post 1", "Post 2", "Post 3", "Post 0"]
    assert 'aria-sort="descending"' in page.text
    page = ann.get("/studio/content/posts?sort=-title")
    assert _titles(page.text)[0] == "Post 4"
    assert ann.get("/studio/content/posts?sort=nonsense").status_code == 200  # ignored, not an error


def test_search_without_an_index_filters_title_fields(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=POSTS)
    for title in ("Apple pie", "Banana bread", "apple CRUMBLE", "a.b"):
        create_item(admin, "posts", {"title": title})
    ann = logged_in(app)
    assert _titles(ann.get("/studio/content/posts?q=APPLE").text) == ["Apple pie", "apple CRUMBLE"]
    assert _titles(ann.get("/studio/content/posts?q=.").text) == ["a.b"]  # text, not a pattern
    assert "No items match" in ann.get("/studio/content/posts?q=cherry").text
    assert 'id="q-hint"' not in ann.get("/studio/content/posts").text  # without an index drafts are found too


def test_search_with_a_search_index_uses_it(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[*POSTS, {"name": "body", "type": "longtext"}])
    create_item(admin, "posts", {"title": "First", "body": "about gardening and roses"})
    create_item(admin, "posts", {"title": "Second", "body": "about sailing"})
    create_item(admin, "posts", {"title": "Roses draft", "body": "nothing", "_state": 0})
    response = admin.put("/api/searchmod/indexes/posts", json={"model": "posts", "fields": ["title", "body"]})
    assert response.status_code == 200, response.text
    ann = logged_in(app)
    # the body is not a title field: only the index finds it; the index
    # holds published items only
    assert _titles(ann.get("/studio/content/posts?q=roses").text) == ["First"]
    assert _titles(ann.get("/studio/content/posts?q=sailing").text) == ["Second"]
    assert "Finds published items (the search index)" in ann.get("/studio/content/posts").text
    create_item(admin, "posts", {"title": "Roses, roses", "body": "roses and more roses"})
    # best match first with no column chosen; a chosen column sorts the matches
    assert _titles(ann.get("/studio/content/posts?q=roses").text) == ["Roses, roses", "First"]
    assert _titles(ann.get("/studio/content/posts?q=roses&sort=title").text) == ["First", "Roses, roses"]
    _roles(admin)
    bob = logged_in(app, "bob", "reader")
    assert _titles(bob.get("/studio/content/posts?q=roses").text) == ["Roses, roses", "First"]
    assert 'id="q-hint"' not in bob.get("/studio/content/posts").text  # a reader sees no drafts anyway


def test_good_filter_and_bad_filter_inline(app: Any, admin: Api) -> None:
    _posts(admin, 5)
    ann = logged_in(app)
    page = ann.get("/studio/content/posts", params={"filter": '{"views": {"$gte": 7}}'})
    assert page.status_code == 200 and _titles(page.text) == ["Post 1", "Post 4"]
    page = ann.get("/studio/content/posts", params={"filter": "{views: {$gt: 7}}"})  # JSON5, as the API takes
    assert _titles(page.text) == ["Post 4"]
    api = admin.get("/api/content/items/posts", params={"filter": '{"views": {"$bogus": 1}}'})
    assert api.status_code == 400
    bad = ann.get("/studio/content/posts", params={"filter": '{"views": {"$bogus": 1}}'})
    # explained beside the box; the list is shown without that filter, not emptied
    assert bad.status_code == 200 and len(_titles(bad.text)) == 5
    message = api.json()["error"]
    assert re.search(r'id="filter-error"[^>]*>' + re.escape(message.replace('"', "&#34;").rstrip(".")), bad.text), \
        message
    assert 'aria-invalid="true"' in bad.text and "the list is shown without it" in bad.text
    broken = ann.get("/studio/content/posts", params={"filter": "{nope"})
    assert broken.status_code == 200 and "not valid json" in broken.text and len(_titles(broken.text)) == 5
    not_object = ann.get("/studio/content/posts", params={"filter": "[1]"})
    assert not_object.status_code == 200 and "filter must be an object" in not_object.text
    fragment = ann.get("/studio/content/posts", params={"filter": "{nope"}, headers={"hx-request": "true"})
    assert fragment.status_code == 200 and "<html" not in fragment.text
    assert 'hx-swap-oob="true"' in fragment.text and "not valid json" in fragment.text


def test_conditions_of_the_visual_filter(app: Any, admin: Api) -> None:
    _posts(admin, 5)
    ann = logged_in(app)
    found = ann.get("/studio/content/posts", params=[("w", "views"), ("o", "gte"), ("v", "7")])
    assert found.status_code == 200 and _titles(found.text) == ["Post 1", "Post 4"]
    # a value that is not one of the field's is explained and left out
    typo = ann.get("/studio/content/posts", params=[("w", "views"), ("o", "gte"), ("v", "four")])
    assert typo.status_code == 200 and "“four” is not a number: left out of the filter" in typo.text
    assert len(_titles(typo.text)) == 5
    hostile = ann.get("/studio/content/posts", params=[("w", "$where"), ("o", "is"), ("v", "1"),
                                                        ("w", "views"), ("o", "$regex"), ("v", ".*"),
                                                        ("w", "title"), ("o", "contains"), ("v", "(.*)+[")])
    assert hostile.status_code == 200 and "is not a field of this model" in hostile.text
    assert "does not apply to this field" in hostile.text and _titles(hostile.text) == []
    # the file of such a list is refused rather than holding more than asked
    refused = ann.get("/studio/content/posts/export", params=[("w", "views"), ("o", "gte"), ("v", "four")])
    assert refused.status_code == 400


def test_pages_with_total_next_and_previous(app: Any, admin: Api) -> None:
    _posts(admin, 45)
    ann = logged_in(app)
    first = ann.get("/studio/content/posts")
    assert "1–20 of 45" in first.text and 'href="/studio/content/posts?page=2"' in first.text
    assert 'rel="prev"' not in first.text
    third = ann.get("/studio/content/posts?page=3")
    assert "41–45 of 45" in third.text and _titles(third.text)[0] == "Post 40"
    assert 'rel="next"' not in third.text and 'href="/studio/content/posts?page=2"' in third.text
    past = ann.get("/studio/content/posts?page=9&sort=views")
    assert past.status_code == 200 and "Page 9 is past the end of the 45 items" in past.text
    assert 'href="/studio/content/posts?sort=views">first page' in past.text
    second = ann.get("/studio/content/posts?page=2").text  # page 1 of an unsorted list has no query at all
    assert 'href="/studio/content/posts" hx-get="/studio/content/posts"' in second and 'rel="prev"' in second
    assert "Page 2 of 3" in second and 'href="/studio/content/posts?page=3"' in second
    fifty = ann.get("/studio/content/posts?limit=50")
    assert "1–45 of 45" in fifty.text and len(_titles(fifty.text)) == 45
    fragment = ann.get("/studio/content/posts?page=2", headers={"hx-request": "true"})
    assert fragment.status_code == 200 and fragment.text.lstrip().startswith("<section id=\"list-results\"")


def test_columns_are_remembered_per_user(app: Any, admin: Api) -> None:
    _posts(admin, 2)
    ann = logged_in(app)
    bob = logged_in(app, "bob", "admin")
    default = ann.get("/studio/content/posts").text
    assert ">kind<" in default.replace("\n", "").replace(" ", "") or "kind" in default
    saved = post_form(ann, "/studio/content/posts/columns", [("columns", "kind"), ("columns", "_created"),
                                                             ("columns", "_unknown"), ("back", "https://evil.example/")],
                      token_from="/studio/content/posts")
    assert saved.status_code == 303 and saved.headers["location"] == "/studio/content/posts"
    mine = ann.get("/studio/content/posts").text
    headers = re.findall(r'<th scope="col"[^>]*>\s*(?:<a [^>]*>)?([^<]+)', mine)
    assert [h.strip() for h in headers if h.strip()] == ["title", "kind", "Created"]
    theirs = bob.get("/studio/content/posts").text
    headers = re.findall(r'<th scope="col"[^>]*>\s*(?:<a [^>]*>)?([^<]+)', theirs)
    assert [h.strip() for h in headers if h.strip()] == ["title", "views", "kind", "State", "Modified"]
    reset = post_form(ann, "/studio/content/posts/columns", [("back", "/studio/content/posts?sort=views")])
    assert reset.headers["location"] == "/studio/content/posts?sort=views"
    assert "Modified" in ann.get("/studio/content/posts").text


def test_batch_publish_unpublish_and_delete(app: Any, admin: Api) -> None:
    items = _posts(admin, 4)
    ids = [i["_id"] for i in items[:3]]
    ann = logged_in(app)
    done = post_form(ann, "/studio/content/posts/batch", [("action", "unpublish"), *[("ids", i) for i in ids]],
                     token_from="/studio/content/posts")
    assert done.status_code == 303
    assert [_state(admin, i) for i in ids] == [None, None, None]  # the API shows published items only
    page = ann.get(done.headers["location"])
    assert "Unpublished 3 items." in page.text and page.text.count("state-draft") == 3
    done = post_form(ann, "/studio/content/posts/batch", [("action", "publish"), *[("ids", i) for i in ids],
                                                          ("back", "/studio/content/posts?page=1")])
    assert done.headers["location"] == "/studio/content/posts?page=1"
    assert [_state(admin, i) for i in ids] == [1, 1, 1]
    assert "Published 3 items." in ann.get("/studio/content/posts").text
    rev = admin.get(f"/api/content/item/posts/{ids[0]}").json()["_rev"]
    assert rev == 3  # through the save path: one revision per write
    confirm = post_form(ann, "/studio/content/posts/batch", [("action", "delete"), ("ids", ids[0]), ("ids", ids[1])])
    assert confirm.status_code == 200 and "Delete 2 items of posts?" in confirm.text
    assert _state(admin, ids[0]) == 1  # not yet
    gone = post_form(ann, "/studio/content/posts/batch", [("action", "delete"), ("confirm", "yes"),
                                                          ("ids", ids[0]), ("ids", ids[1])])
    assert gone.status_code == 303
    assert _state(admin, ids[0]) is None and _state(admin, ids[1]) is None and _state(admin, ids[2]) == 1
    assert "Deleted 2 items." in ann.get("/studio/content/posts").text
    nothing = post_form(ann, "/studio/content/posts/batch", [("action", "publish")])
    assert nothing.status_code == 303 and "Select the items first." in ann.get("/studio/content/posts").text


def test_batch_refused_without_the_permission_changes_nothing(app: Any, admin: Api) -> None:
    items = _posts(admin, 3)
    _roles(admin)
    ids = [("ids", i["_id"]) for i in items]
    eve = logged_in(app, "eve", "editor")
    page = eve.get("/studio/content/posts").text
    assert 'value="publish"' in page and 'value="delete"' not in page  # no delete right: no button
    for confirm in ("", "yes"):
        refused = post_form(eve, "/studio/content/posts/batch", [("action", "delete"), ("confirm", confirm), *ids],
                            token_from="/studio/content/posts")
        assert refused.status_code == 403
    assert all(_state(admin, i["_id"]) == 1 for i in items)
    bob = logged_in(app, "bob", "reader")
    for action in ("publish", "unpublish", "delete"):
        refused = post_form(bob, "/studio/content/posts/batch", [("action", action), *ids],
                            token_from="/studio/content/posts")
        assert refused.status_code == 403, action
    assert all(_state(admin, i["_id"]) == 1 for i in items)
    assert post_form(bob, "/studio/content/posts/batch", [("action", "explode"), *ids]).status_code == 400


def test_reader_sees_published_items_and_no_batch_actions(app: Any, admin: Api) -> None:
    _posts(admin, 2)
    create_item(admin, "posts", {"title": "Hidden draft", "_state": 0})
    _roles(admin)
    bob = logged_in(app, "bob", "reader")
    page = bob.get("/studio/content/posts")
    assert page.status_code == 200 and _titles(page.text) == ["Post 0", "Post 1"]
    assert "Hidden draft" not in page.text and "1–2 of 2" in page.text
    assert 'name="ids"' not in page.text and 'id="batch"' not in page.text
    assert 'href="/studio/content/posts/item"' not in page.text  # may not create
    assert "?sort=_state" not in page.text
    ann = logged_in(app)
    assert "Hidden draft" in ann.get("/studio/content/posts").text
    admin.put("/api/system/roles/nobody", json={"permissions": {}})
    assert logged_in(app, "nina", "nobody").get("/studio/content/posts").status_code == 403
    assert ann.get("/studio/content/nothing").status_code == 404


def test_singleton_opens_its_editor(app: Any, admin: Api) -> None:
    put_model(admin, "settings", type="singleton", fields=[{"name": "site", "type": "text"}])
    response = logged_in(app).get("/studio/content/settings")
    assert response.status_code == 303 and response.headers["location"] == "/studio/content/settings/item"


def _tree(admin: Api) -> dict[str, str]:
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    ids = {}
    for label in ("Home", "About", "Blog"):
        ids[label] = create_item(admin, "nav", {"label": label})["_id"]
    ids["Team"] = create_item(admin, "nav", {"label": "Team", "_pid": ids["About"]})["_id"]
    return ids


def _shape(admin: Api) -> list[Any]:
    def walk(nodes: list[dict[str, Any]]) -> list[Any]:
        return [(n["label"], walk(n["_children"])) if n["_children"] else n["label"] for n in nodes]
    return walk(admin.get("/api/content/tree/nav").json())


def test_tree_shows_nested_items_and_moves_them(app: Any, admin: Api) -> None:
    ids = _tree(admin)
    ann = logged_in(app)
    page = ann.get("/studio/content/nav")
    assert page.status_code == 200 and "4 items" in page.text
    assert page.text.index(">Home<") < page.text.index(">About<") < page.text.index(">Team<") < page.text.index(">Blog<")
    assert "Move Team up" in page.text and "sortable.min.js" in page.text
    csrf = page_csrf(page.text)

    def move(**data: str) -> Any:
        return post_form(ann, "/studio/content/nav/move", data, token_from="/studio/content/nav")

    assert move(id=ids["Blog"], parent="", position="0").status_code == 303  # drag and drop's form
    assert _shape(admin) == ["Blog", "Home", ("About", ["Team"])]
    assert move(id=ids["Home"], parent=ids["About"], position="0").status_code == 303  # re-parent
    assert _shape(admin) == ["Blog", ("About", ["Home", "Team"])]
    assert move(id=ids["Home"], dir="down").status_code == 303
    assert _shape(admin) == ["Blog", ("About", ["Team", "Home"])]
    assert move(id=ids["Home"], dir="outdent").status_code == 303
    assert _shape(admin) == ["Blog", ("About", ["Team"]), "Home"]
    assert move(id=ids["Home"], dir="indent").status_code == 303
    assert _shape(admin) == ["Blog", ("About", ["Team", "Home"])]
    assert move(id=ids["Blog"], dir="up").status_code == 303  # first already: nothing changes
    assert _shape(admin) == ["Blog", ("About", ["Team", "Home"])]
    fragment = ann.post("/studio/content/nav/move", data={"id": ids["About"], "dir": "up"},
                        headers={"x-csrf-token": csrf, "hx-request": "true"})
    assert fragment.status_code == 200 and fragment.text.lstrip().startswith('<div id="tree"')
    assert _shape(admin) == [("About", ["Team", "Home"]), "Blog"]
    cycle = move(id=ids["About"], parent=ids["Team"], position="0")
    assert cycle.status_code == 400 and "own ancestor" in cycle.text
    assert move(id=ids["About"], parent="", position="x").status_code == 400
    stored = {n["label"]: n for n in admin.get("/api/content/items/nav").json()}
    assert (stored["Team"]["_o"], stored["Home"]["_o"]) == (0, 1) and stored["Home"]["_pid"] == ids["About"]


def test_tree_moves_need_update(app: Any, admin: Api) -> None:
    ids = _tree(admin)
    admin.put("/api/system/roles/navreader", json={"permissions": {"content/nav/read": True}})
    bob = logged_in(app, "bob", "navreader")
    page = bob.get("/studio/content/nav")
    assert page.status_code == 200 and "Move Home up" not in page.text and "sortable" not in page.text
    refused = post_form(bob, "/studio/content/nav/move", {"id": ids["Blog"], "parent": "", "position": "0"},
                        token_from="/studio/content/nav")
    assert refused.status_code == 403
    assert _shape(admin) == ["Home", ("About", ["Team"]), "Blog"]


def test_a_role_that_may_delete_but_not_update(app: Any, admin: Api) -> None:
    items = _posts(admin, 2)
    draft = create_item(admin, "posts", {"title": "Unseen draft", "_state": 0})
    admin.put("/api/system/roles/cleaner", json={"permissions": {"content/posts/read": True,
                                                                 "content/posts/delete": True}})
    cleo = logged_in(app, "cleo", "cleaner")
    page = cleo.get("/studio/content/posts").text
    assert 'value="delete"' in page and 'value="publish"' not in page and "Unseen draft" not in page
    gone = post_form(cleo, "/studio/content/posts/batch", [("action", "delete"), ("confirm", "yes"),
                                                           ("ids", items[0]["_id"]), ("ids", draft["_id"])],
                     token_from="/studio/content/posts")
    assert gone.status_code == 303 and "Deleted 1 item." in cleo.get("/studio/content/posts").text
    assert _state(admin, items[0]["_id"]) is None and _state(admin, items[1]["_id"]) == 1
    assert admin.get("/api/content/items/posts", params={"filter": '{"_state": 0}'}).status_code == 200
    ann = logged_in(app)
    assert "Unseen draft" in ann.get("/studio/content/posts").text  # the draft it could not see stays


def test_a_link_column_names_the_linked_items(app: Any, admin: Api) -> None:
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "books", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
        {"name": "editors", "type": "contentItemLink", "multiple": True, "opts": {"link": "authors"}}])
    ada = create_item(admin, "authors", {"name": "Ada Lovelace"})
    alan = create_item(admin, "authors", {"name": "Alan <Turing>"})
    link = {"_model": "authors", "_id": ada["_id"]}
    create_item(admin, "books", {"title": "Engines", "author": link,
                                 "editors": [link, {"_model": "authors", "_id": alan["_id"]}]})
    ann = logged_in(app)
    saved = post_form(ann, "/studio/content/books/columns", [("columns", "author"), ("columns", "editors")])
    assert saved.status_code == 303
    page = ann.get("/studio/content/books").text
    assert "<td>Ada Lovelace</td>" in page and "<td>Ada Lovelace, Alan &lt;Turing&gt;</td>" in page
    # who may not read the linked model sees the reference, not the name
    admin.put("/api/system/roles/bookish", json={"permissions": {"content/books/read": True}})
    bob = logged_in(app, "bob", "bookish")
    post_form(bob, "/studio/content/books/columns", [("columns", "author")])
    assert "Ada Lovelace" not in bob.get("/studio/content/books").text


def test_the_filter_example_speaks_of_the_models_own_fields(app: Any, admin: Api) -> None:
    _posts(admin, 1)
    put_model(admin, "notes", type="collection", fields=[{"name": "heading", "type": "text"}])
    put_model(admin, "flags", type="collection", fields=[{"name": "on", "type": "boolean"}])
    ann = logged_in(app)
    assert "<code>{&#34;views&#34;: {&#34;$gt&#34;: 10}}</code>" in ann.get("/studio/content/posts").text
    assert "<code>{&#34;heading&#34;: {&#34;$regex&#34;: &#34;^A&#34;}}</code>" in ann.get("/studio/content/notes").text
    assert "<code>{&#34;_state&#34;: 0}</code>" in ann.get("/studio/content/flags").text


def test_chosen_columns_follow_a_renamed_field(app: Any, admin: Api) -> None:
    _posts(admin, 1)
    ann = logged_in(app)
    post_form(ann, "/studio/content/posts/columns", [("columns", "views"), ("columns", "_id")])
    renamed = admin.put("/api/system/models/posts", json={
        "type": "collection", "indexes": ["count"], "renames": {"views": "count"},
        "fields": [{"name": "title", "type": "text"}, {"name": "count", "type": "number"}, POSTS[2]]})
    assert renamed.status_code == 200, renamed.text
    page = ann.get("/studio/content/posts").text
    assert 'name="columns" value="count" checked' in page and 'name="columns" value="_id" checked' in page
    assert 'name="columns" value="kind" checked' not in page  # still the user's choice, not the defaults


def test_saved_views_private_shared_with_a_role_and_deleted(app: Any, admin: Api) -> None:
    _posts(admin, 5)
    _roles(admin)
    ann = logged_in(app)
    query = "w=views&o=gte&v=7&sort=-views&limit=50&page=3&q=words"
    saved = post_form(ann, "/studio/content/posts/views", {"name": "Popular", "query": query, "shared": ""},
                      token_from="/studio/content/posts")
    assert saved.status_code == 303
    # kept: the conditions, the sort, the page size and the columns shown; not the page nor the words
    assert saved.headers["location"].startswith("/studio/content/posts?sort=-views&limit=50&cols=")
    assert "w=views&o=gte&v=7" in saved.headers["location"] and "page=" not in saved.headers["location"]
    listed = ann.get(saved.headers["location"])
    assert _titles(listed.text) == ["Post 4", "Post 1"] and 'aria-current="page">Popular' in listed.text
    bob = logged_in(app, "bob", "editor")
    assert "Popular" not in bob.get("/studio/content/posts").text  # private
    post_form(ann, "/studio/content/posts/views", {"name": "Popular", "query": query, "shared": "editor"},
              token_from="/studio/content/posts")
    seen = bob.get("/studio/content/posts").text
    assert "Popular" in seen and "(shared by" in seen
    view_id = re.search(r'/studio/content/posts/views/([0-9a-f]{24})/delete', ann.get(
        saved.headers["location"]).text).group(1)  # type: ignore[union-attr]
    refused = post_form(bob, f"/studio/content/posts/views/{view_id}/delete", {}, token_from="/studio/content/posts")
    assert refused.status_code == 403
    bad_role = post_form(ann, "/studio/content/posts/views", {"name": "X", "query": "", "shared": "nobody"},
                         token_from="/studio/content/posts")
    assert bad_role.status_code == 400 and "Role nobody not found" in bad_role.text
    done = post_form(ann, f"/studio/content/posts/views/{view_id}/delete", {}, token_from="/studio/content/posts")
    assert done.status_code == 303 and "Popular" not in bob.get("/studio/content/posts").text


def test_bulk_edit_of_selected_and_of_all_matching_items_and_its_undo(app: Any, admin: Api) -> None:
    posts = _posts(admin, 6)
    _roles(admin)
    ann = logged_in(app)
    ids = [p["_id"] for p in posts[:2]]
    pairs = [("scope", "selected"), *[("ids", i) for i in ids], ("list", ""), ("field", "kind"), ("op", "set"),
             ("value", "guide")]
    step = post_form(ann, "/studio/content/posts/bulk", pairs[:4])
    assert step.status_code == 200 and "Edit a field of the 2 selected items" in step.text
    confirm = post_form(ann, "/studio/content/posts/bulk/check", pairs)
    assert confirm.status_code == 200 and "Set kind: guide on 2 items?" in confirm.text
    token = re.search(r'name="token" value="([^"]+)"', confirm.text).group(1)  # type: ignore[union-attr]
    done = post_form(ann, "/studio/content/posts/bulk/run", [*pairs, ("token", token)])
    assert done.status_code == 200 and "Changed 2 items." in done.text
    kinds = {i["_id"]: i["kind"] for i in admin.get("/api/content/items/posts").json()}
    assert [kinds[i] for i in ids] == ["guide", "guide"] and list(kinds.values()).count("guide") == 2
    assert admin.get(f"/api/revisions/content/posts/{ids[0]}").json()["total"] == 2  # one revision each
    # every item the list shows (its conditions), in one go: one already holds the value
    refused = post_form(ann, "/studio/content/posts/bulk/check", [("scope", "all"), ("list", ""), ("field", "kind"),
                                                                   ("op", "set"), ("value", "review")])
    assert refused.status_code == 400 and "kind must be one of news, guide" in refused.text  # said before any save
    everything = [("scope", "all"), ("list", "w=views&o=gte&v=4"), ("field", "views"), ("op", "set"),
                  ("value", "99")]
    confirm = post_form(ann, "/studio/content/posts/bulk/check", everything)
    assert "on 4 items?" in confirm.text  # views 7, 4, 8 and 5
    done = post_form(ann, "/studio/content/posts/bulk/run", [*everything, ("token", "tok-12345")])
    assert "Changed 4 items." in done.text
    edit_id = re.search(r"/bulk/([0-9a-f]{24})/undo", done.text).group(1)  # type: ignore[union-attr]
    # changed since: left alone by the undo
    create_item(admin, "posts", {"_id": posts[1]["_id"], "title": "Post 1 again", "kind": "news", "views": 99})
    undone = post_form(ann, f"/studio/content/posts/bulk/{edit_id}/undo", [])
    assert "3 items got their value back; 1 changed or deleted since the edit" in undone.text
    assert admin.get(f"/api/content/item/posts/{posts[2]['_id']}").json()["views"] == 4
    assert admin.get(f"/api/content/item/posts/{posts[1]['_id']}").json()["title"] == "Post 1 again"
    same = post_form(ann, "/studio/content/posts/bulk/run", [*pairs, ("token", "tok-12345")])
    assert "Changed 1 item; 1 held this value already." in same.text  # post 1 was news again
    again = post_form(ann, f"/studio/content/posts/bulk/{edit_id}/undo", [])
    assert again.status_code == 400 and "undone already" in again.text
    # bad input: explained in place, nothing stored
    bad = post_form(ann, "/studio/content/posts/bulk/check", [*pairs[:4], ("field", "views"), ("op", "set"),
                                                               ("value", "many")])
    assert bad.status_code == 400 and "“many” is not a value of views" in bad.text
    add = post_form(ann, "/studio/content/posts/bulk/check", [*pairs[:4], ("field", "views"), ("op", "add"),
                                                               ("value", "1")])
    assert add.status_code == 400 and "holds one value: set it instead" in add.text
    reader = logged_in(app, "rea", "reader")
    assert post_form(reader, "/studio/content/posts/bulk", pairs[:4]).status_code == 403


def test_presence_and_the_lock_through_the_studio_and_the_api(app: Any, admin: Api) -> None:
    posts = _posts(admin, 1)
    _roles(admin)
    resource = f"content/posts/{posts[0]['_id']}"
    assert admin.get(f"/api/content/lock/posts/{posts[0]['_id']}").json() == {"locked": False}
    ann, bob = logged_in(app), logged_in(app, "bob", "editor")
    first = post_form(ann, "/studio/presence", {"resource": resource, "action": "join"}).json()
    assert first["holder"]["mine"] is True and first["others"] == []
    second = post_form(bob, "/studio/presence", {"resource": resource, "action": "join"}).json()
    assert second["holder"] == {"name": "ann", "since": first["holder"]["since"], "mine": False}
    assert second["others"] == ["ann"]
    taken = post_form(bob, "/studio/presence", {"resource": resource, "action": "take"}).json()
    assert taken["holder"]["mine"] is True
    lock = admin.get(f"/api/content/lock/posts/{posts[0]['_id']}").json()
    assert lock["locked"] is True and lock["by"] == "bob"
    post_form(bob, "/studio/presence", {"resource": resource, "action": "leave"})
    assert admin.get(f"/api/content/lock/posts/{posts[0]['_id']}").json()["by"] == "ann"  # passed on
    reader = logged_in(app, "rea", "reader")
    refused = post_form(reader, "/studio/presence", {"resource": resource, "action": "take"})
    assert refused.status_code == 403
    for bad in ("content/../x", "pages/1", "content/nope/" + "a" * 24):
        assert post_form(ann, "/studio/presence", {"resource": bad, "action": "join"}).status_code in (400, 404)
    assert admin.get("/api/content/lock/nope/" + "a" * 24).status_code == 404
    assert admin.with_key(None).get(f"/api/content/lock/posts/{posts[0]['_id']}").status_code == 401


def test_live_preview_answers_the_form_unsaved_and_the_example_page_may_be_framed(app: Any, admin: Api) -> None:
    posts = _posts(admin, 1)
    _roles(admin)
    ann = logged_in(app)
    live = post_form(ann, f"/studio/content/posts/item/{posts[0]['_id']}/live", {"f.title": "Not saved yet"})
    assert live.status_code == 200
    answer = live.json()
    assert answer["type"] == "quire:preview" and answer["item"]["title"] == "Not saved yet"
    assert answer["item"]["views"] == posts[0]["views"]  # the stored values the form did not send
    assert admin.get(f"/api/content/item/posts/{posts[0]['_id']}").json()["title"] == "Post 0"  # nothing stored
    reader = logged_in(app, "rea", "reader")
    assert post_form(reader, f"/studio/content/posts/item/{posts[0]['_id']}/live", {}).status_code == 403
    assert post_form(ann, "/studio/content/posts/item/nope/live", {}).status_code == 404
    example = ann.get("/demo/preview")
    assert example.status_code == 200 and "frame-ancestors 'self'" in example.headers["content-security-policy"]
    assert example.headers["x-frame-options"] == "SAMEORIGIN"
