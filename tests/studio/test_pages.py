"""Pages, menus and page settings in the studio, over HTTP: who may see and
change what, CSRF, the route changes of a move shown before it is saved,
the editor's validation next to its fields (nothing stored), menus with
localized link titles, the settings form, and hostile input."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.conftest import Api, put_model
from tests.studio.conftest import logged_in, page_csrf, post_form

PAGES_GETS = ["/studio/pages", "/studio/pages/new", "/studio/pages/settings", "/studio/menus"]


def _page(admin: Api, **data: Any) -> dict[str, Any]:
    response = admin.post("/api/pages/page", json={"data": data})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _site(admin: Api) -> dict[str, dict[str, Any]]:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    about = _page(admin, title="About", title_de="Über uns")
    team = _page(admin, title="Team", _pid=about["_id"])
    blog = _page(admin, title="Blog")
    draft = _page(admin, title="Secret plans", _state=0)
    return {"about": about, "team": team, "blog": blog, "draft": draft}


def _routes(admin: Api) -> dict[str, str]:
    pages = admin.get("/api/pages/pages", params={"fields": '{"title":1,"_r":1,"_r_de":1}'}).json()
    return {p["title"]: p["_r"] for p in pages}


def test_who_may_see_what(app: Any, admin: Api) -> None:
    pages = _site(admin)
    out = logged_in(app, "ann")
    from tests.admin.conftest import new_browser

    anonymous = new_browser(app)
    for path in [*PAGES_GETS, f"/studio/pages/{pages['about']['_id']}", "/studio/menus/main"]:
        response = anonymous.get(path)
        assert response.status_code == 303 and "/auth/login" in response.headers["location"], path
    for path in PAGES_GETS:
        assert out.get(path).status_code == 200, path
    sidebar = out.get("/").text
    for href in ('href="/studio/pages"', 'href="/studio/menus"', 'href="/studio/pages/settings"'):
        assert href in sidebar

    admin.put("/api/system/roles/reader", json={"permissions": {"pages/read": True}})
    rita = logged_in(app, "rita", "reader")
    tree = rita.get("/studio/pages")
    assert tree.status_code == 200 and "About" in tree.text and "/about/team" in tree.text
    assert "Secret plans" not in tree.text  # may only read: published pages, as the API answers
    assert "tree-moves" not in tree.text and "/studio/pages/new" not in tree.text
    side = rita.get("/").text
    assert 'href="/studio/pages"' in side and 'href="/studio/menus"' not in side
    assert 'href="/studio/pages/settings"' not in side
    for path in ["/studio/pages/new", "/studio/pages/settings", "/studio/menus", f"/studio/pages/{pages['about']['_id']}",
                 f"/studio/pages/{pages['about']['_id']}/move"]:
        assert rita.get(path).status_code == 403, path
    refused = post_form(rita, "/studio/pages/move", {"id": pages["team"]["_id"], "parent": ""},
                        token_from="/studio/pages")
    assert refused.status_code == 403
    assert _routes(admin)["Team"] == "/about/team"

    admin.put("/api/system/roles/webmaster", json={"permissions": {"pages/manage": True}})
    will = logged_in(app, "will", "webmaster")
    assert "Secret plans" in will.get("/studio/pages").text and "tree-moves" in will.get("/studio/pages").text
    for path in PAGES_GETS:
        assert will.get(path).status_code == 200, path

    admin.put("/api/system/roles/nobody", json={"permissions": {}})
    nina = logged_in(app, "nina", "nobody")
    assert nina.get("/studio/pages").status_code == 403
    assert 'href="/studio/pages"' not in nina.get("/").text


def test_posts_without_the_token_are_refused_and_store_nothing(app: Any, admin: Api) -> None:
    pages = _site(admin)
    ann = logged_in(app)
    headers = {"content-type": "application/x-www-form-urlencoded"}
    posts = [
        ("/studio/pages/move", {"id": pages["team"]["_id"], "parent": "", "confirm": "1"}),
        ("/studio/pages/new", {"type": "layout", "title": "Sneaky", "state": "1"}),
        (f"/studio/pages/{pages['about']['_id']}", {"type": "layout", "title": "Sneaky", "slug": "about", "state": "1"}),
        (f"/studio/pages/{pages['about']['_id']}/delete", {}),
        ("/studio/pages/settings", {"seo_title": "Sneaky"}),
        ("/studio/menus", {"name": "sneaky"}),
    ]
    for path, data in posts:
        response = ann.post(path, content=urlencode({**data, "csrf": "wrong"}), headers=headers)
        assert response.status_code == 403, path
    assert _routes(admin) == {"About": "/about", "Team": "/about/team", "Blog": "/blog"}
    assert admin.get("/api/pages/menus").json() == []
    assert admin.get("/api/pages/settings").json()["seo"] == {}


def test_a_move_that_changes_routes_is_shown_first_then_done(app: Any, admin: Api) -> None:
    pages = _site(admin)
    ann = logged_in(app)
    # under Blog: About and its Team change routes, in both locales
    shown = post_form(ann, "/studio/pages/move", {"id": pages["about"]["_id"], "parent": pages["blog"]["_id"],
                                                  "position": "0"}, token_from="/studio/pages")
    assert shown.status_code == 200
    text = shown.text
    assert "Move “About” under Blog?" in text
    for old, new in (("/about", "/blog/about"), ("/about/team", "/blog/about/team"), ("/uber-uns", "/blog/uber-uns")):
        assert re.search(rf'<code class="old-route">{old}</code></td><td><code class="new-route">{new}</code>', text), old
    assert _routes(admin)["About"] == "/about"  # nothing stored yet
    done = post_form(ann, "/studio/pages/move", {"id": pages["about"]["_id"], "parent": pages["blog"]["_id"],
                                                 "position": "0", "confirm": "1"}, token_from="/studio/pages")
    assert done.status_code == 303 and done.headers["location"] == "/studio/pages"
    assert _routes(admin)["Team"] == "/blog/about/team"
    de = admin.get("/api/pages/page", params={"route": "/blog/uber-uns", "locale": "de"}).json()
    assert de["title"] == "Über uns"


def test_reordering_changes_no_route_and_needs_no_confirmation(app: Any, admin: Api) -> None:
    pages = _site(admin)
    ann = logged_in(app)
    order = lambda: [p["title"] for p in admin.get("/api/pages/pages", params={  # noqa: E731
        "filter": '{"_pid": null}', "sort": '{"_o": 1}'}).json()]
    assert order() == ["About", "Blog"]
    moved = post_form(ann, "/studio/pages/move", {"id": pages["blog"]["_id"], "dir": "up"},
                      token_from="/studio/pages", headers={"hx-request": "true"})
    assert moved.status_code == 200 and 'id="tree"' in moved.text and "move-plan" not in moved.text
    assert order() == ["Blog", "About"]
    # indent: under the page above, shown first (routes change)
    indent = post_form(ann, "/studio/pages/move", {"id": pages["about"]["_id"], "dir": "indent"},
                       token_from="/studio/pages", headers={"hx-request": "true"})
    assert 'id="move-plan"' in indent.text and "/blog/about" in indent.text
    assert _routes(admin)["About"] == "/about"


def test_a_move_into_its_own_subtree_or_onto_a_taken_route_is_refused(app: Any, admin: Api) -> None:
    pages = _site(admin)
    _page(admin, title="Team")  # /team at the top
    ann = logged_in(app)
    cycle = post_form(ann, "/studio/pages/move", {"id": pages["about"]["_id"], "parent": pages["team"]["_id"]},
                      token_from="/studio/pages", headers={"hx-request": "true"})
    assert cycle.status_code == 400 and "its own ancestor" in cycle.text
    taken = post_form(ann, "/studio/pages/move", {"id": pages["team"]["_id"], "parent": ""},
                      token_from="/studio/pages", headers={"hx-request": "true"})
    assert taken.status_code == 409 and "Route /team is already taken" in taken.text
    assert _routes(admin)["About"] == "/about"
    for bad in ({"id": "x" * 5000, "parent": ""}, {"id": pages["team"]["_id"], "parent": "nope"},
                {"id": pages["team"]["_id"], "dir": "sideways"}, {"id": pages["team"]["_id"], "position": "-1"},
                {"id": "\x00"}):
        response = post_form(ann, "/studio/pages/move", bad, token_from="/studio/pages")
        assert response.status_code == 400, bad


def test_the_move_form_lists_every_page_but_its_own_subtree(app: Any, admin: Api) -> None:
    pages = _site(admin)
    html = logged_in(app).get(f"/studio/pages/{pages['about']['_id']}/move").text
    select = html[html.index('id="move-parent"'):]
    options = re.findall(r'<option value="([0-9a-f]*)"', select[:select.index("</select>")])
    assert set(options) == {"", pages["blog"]["_id"], pages["draft"]["_id"]}


def _editor_fields(html: str) -> list[tuple[str, str]]:
    """The editor form's values as a browser would send them (inputs, the
    selected options, text areas), without the op buttons."""
    form = html[html.index('<form method="post" action="/studio/pages/'):]
    form = form[:form.index("</form>")]
    pairs: list[tuple[str, str]] = []
    for tag in re.finditer(r"<input ([^>]*)>|<textarea ([^>]*)>(.*?)</textarea>|<select ([^>]*)>(.*?)</select>", form, re.S):
        attrs = tag.group(1) or tag.group(2) or tag.group(4)
        name = re.search(r'name="([^"]+)"', attrs)
        if not name:
            continue
        if tag.group(1) is not None:
            value = re.search(r'value="([^"]*)"', attrs)
            pairs.append((name.group(1), _unescape(value.group(1) if value else "")))
        elif tag.group(2) is not None:
            pairs.append((name.group(1), _unescape(tag.group(3))))
        else:
            chosen = re.search(r'<option value="([^"]*)"[^>]* selected', tag.group(5))
            first = re.search(r'<option value="([^"]*)"', tag.group(5))
            pairs.append((name.group(1), (chosen or first).group(1) if (chosen or first) else ""))  # type: ignore[union-attr]
    return pairs


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


def _set(pairs: list[tuple[str, str]], **values: str) -> list[tuple[str, str]]:
    return [(k, values.pop(k)) if k in values else (k, v) for k, v in pairs] + list(values.items())


def test_the_editor_saves_titles_slugs_seo_layout_and_model(app: Any, admin: Api) -> None:
    pages = _site(admin)
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    ann = logged_in(app)
    path = f"/studio/pages/{pages['blog']['_id']}"
    pairs = _editor_fields(ann.get(path).text)
    pairs = _set(pairs, type="collection", data_model="posts", slug_de="neuigkeiten", title_de="Neuigkeiten",
                 seo_title="The blog", seo_de_title="Das Blog", seo_more='{"robots": "index"}')
    # add a component (re-shown, not saved), fill it in, then save
    added = ann.post(path, content=urlencode([*pairs, ("op", "add"), ("csrf", page_csrf(ann.get(path).text))]),
                     headers={"content-type": "application/x-www-form-urlencoded"})
    assert added.status_code == 200 and 'id="comp-0-component"' in added.text
    assert admin.get("/api/pages/page/" + pages["blog"]["_id"]).json()["layout"] == []
    pairs = _set(_editor_fields(added.text), comp_component="hero", comp_label="Top", comp_data='{"text": "Hi"}')
    saved = post_form(ann, path, [*pairs, ("op", "save")], token_from=path)
    assert saved.status_code == 303, saved.text
    page = admin.get(f"/api/pages/page/{pages['blog']['_id']}").json()
    assert page["type"] == "collection" and page["data"] == {"model": "posts", "slugField": "slug"}
    assert page["layout"] == [{"component": "hero", "label": "Top", "data": {"text": "Hi"}}]
    assert page["seo"] == {"robots": "index", "title": "The blog"} and page["seo_de"] == {"title": "Das Blog"}
    assert page["_r_de"] == "/neuigkeiten" and page["title_de"] == "Neuigkeiten"
    # the API's answer is shown, localized
    html = ann.get(path, params={"locale": "de"}).text
    assert 'id="api-json"' in html and "&#34;title&#34;: &#34;Neuigkeiten&#34;" in html


def test_the_editor_shows_the_services_refusals_next_to_the_fields(app: Any, admin: Api) -> None:
    pages = _site(admin)
    put_model(admin, "home", type="singleton", fields=[{"name": "title", "type": "text"}])
    ann = logged_in(app)
    path = f"/studio/pages/{pages['blog']['_id']}"
    before = admin.get(f"/api/pages/page/{pages['blog']['_id']}").json()
    cases = [
        ({"slug": "a b"}, 'id="slug-error"', "may not contain"),
        ({"slug": "about"}, 'id="slug-error"', "Route /about is already taken"),
        ({"title": " "}, 'id="title-error"', "is required"),
        ({"type": "collection", "data_model": "home"}, 'id="model-error"', "home is a singleton model"),
        ({"type": "link", "data_url": "javascript:alert(1)"}, 'id="url-error"', "may not use the javascript: scheme"),
        ({"data_more": "{not json"}, "data_more", "is not JSON"),
        ({"seo_more": "[1]"}, "seo_more", "must be a JSON object"),
        ({"type": "wizard"}, "type", "must be one of"),
    ]
    for change, where, message in cases:
        pairs = _set(_editor_fields(ann.get(path).text), **change)
        response = post_form(ann, path, [*pairs, ("op", "save")], token_from=path)
        assert response.status_code in (400, 409), change
        assert where in response.text and message in response.text, change
        assert 'aria-invalid="true"' in response.text
    assert admin.get(f"/api/pages/page/{pages['blog']['_id']}").json() == before


def test_new_page_under_a_parent_with_a_bad_component(app: Any, admin: Api) -> None:
    pages = _site(admin)
    ann = logged_in(app)
    pairs = _set(_editor_fields(ann.get("/studio/pages/new").text), title="Contact", pid=pages["about"]["_id"])
    bad = post_form(ann, "/studio/pages/new", [*pairs, ("comp_component", "text"), ("comp_label", ""),
                                               ("comp_data", "[]"), ("comp_children", ""), ("op", "save")],
                    token_from="/studio/pages")
    assert bad.status_code == 400 and "must be a JSON object" in bad.text
    assert "Contact" not in _routes(admin)
    made = post_form(ann, "/studio/pages/new", [*pairs, ("op", "save")], token_from="/studio/pages")
    assert made.status_code == 303
    assert _routes(admin)["Contact"] == "/about/contact"
    huge = post_form(ann, "/studio/pages/new", [*_set(pairs, title="x" * 200_001), ("op", "save")],
                     token_from="/studio/pages")
    assert huge.status_code == 400


def test_deleting_a_page_names_the_pages_under_it(app: Any, admin: Api) -> None:
    pages = _site(admin)
    ann = logged_in(app)
    path = f"/studio/pages/{pages['about']['_id']}/delete"
    assert "Team" in ann.get(path).text
    assert post_form(ann, path, {}, token_from="/studio/pages").status_code == 303
    assert set(_routes(admin)) == {"Blog"}
    for bad in ("/studio/pages/nope", "/studio/pages/" + "0" * 24, "/studio/pages/%00", "/studio/menus/nope"):
        assert ann.get(bad).status_code in (400, 404), bad


def test_menus_with_links_to_pages_and_urls_and_german_titles(app: Any, admin: Api) -> None:
    pages = _site(admin)
    ann = logged_in(app)
    bad = post_form(ann, "/studio/menus", {"name": "1 bad name"}, token_from="/studio/pages")
    assert bad.status_code == 400 and "must be a name like main" in bad.text
    made = post_form(ann, "/studio/menus", {"name": "main", "label": "Main menu"}, token_from="/studio/pages")
    assert made.status_code == 303 and made.headers["location"] == "/studio/menus/main"
    again = post_form(ann, "/studio/menus", {"name": "main"}, token_from="/studio/pages")
    assert again.status_code == 400 and "is the name of another menu" in again.text

    def link(page: str = "", url: str = "", title: str = "", de: str = "", depth: int = 0) -> list[tuple[str, str]]:
        return [("link_depth", str(depth)), ("link_title", title), ("link_title_de", de), ("link_page", page),
                ("link_url", url), ("link_target", ""), ("link_active", "1"), ("link_data", "")]

    base = [("name", "main"), ("label", "Main menu")]
    rows = [*link(page=pages["about"]["_id"], de="Wir"), *link(page=pages["team"]["_id"], depth=1),
            *link(url="https://example.com/docs", title="Docs", de="Doku")]
    refused = post_form(ann, "/studio/menus/main", [*base, *rows, *link(url="javascript:x", depth=1), ("op", "save")],
                        token_from="/studio/pages")
    assert refused.status_code == 400 and "may not use the javascript: scheme" in refused.text
    assert admin.get("/api/pages/menu/main").json()["links"] == []
    saved = post_form(ann, "/studio/menus/main", [*base, *rows, ("op", "save")], token_from="/studio/pages")
    assert saved.status_code == 303
    menu = admin.get("/api/pages/menu/main", params={"locale": "de"}).json()
    assert [(lk["title"], lk["route"]) for lk in menu["links"]] == [("Wir", "/uber-uns"), ("Doku", "https://example.com/docs")]
    assert menu["links"][0]["children"][0]["route"] == "/uber-uns/team"
    # outdent the Team link (re-shown, not saved)
    shown = post_form(ann, "/studio/menus/main", [*base, *rows, ("op", "outdent-1")], token_from="/studio/pages")
    assert shown.status_code == 200 and len(admin.get("/api/pages/menu/main").json()["links"]) == 2
    assert re.findall(r'name="link_depth" value="(\d)"', shown.text) == ["0", "0", "0"]
    for op, depths in (("indent-1", ["0", "1", "0"]), ("down-0", ["0", "0", "1"]), ("remove-0", ["0"]), ("remove-1", ["0", "0"]),
                       ("add", ["0", "1", "0", "0"]), ("up-2", ["0", "0", "1"]), ("nonsense", ["0", "1", "0"])):
        response = post_form(ann, "/studio/menus/main", [*base, *rows, ("op", op)], token_from="/studio/pages")
        assert re.findall(r'name="link_depth" value="(\d)"', response.text) == depths, op
    gone = post_form(ann, "/studio/menus/main/delete", {}, token_from="/studio/pages")
    assert gone.status_code == 303 and admin.get("/api/pages/menus").json() == []


def test_page_settings_form(app: Any, admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    admin.post("/api/pages/settings", json={"data": {"seo": {"title": "Old", "image": "x.png"}, "meta": {"theme": "dark"}}})
    ann = logged_in(app)
    html = ann.get("/studio/pages/settings").text
    assert 'value="Old"' in html and "x.png" in html and "dark" in html
    fields = {"seo_title": "Quire Demo", "seo_description": "", "seo_more": '{"image": "x.png"}', "seo_de_title": "Quire Vorführung",
              "seo_de_description": "", "meta_siteName": "Quire", "meta_more": '{"theme": "dark"}', "images": "", "preview": "",
              "scripts_header": "<script src=/a.js></script>", "scripts_footer": "", "scripts_more": ""}
    bad = post_form(ann, "/studio/pages/settings", {**fields, "images": "[1, 2]"}, token_from="/studio/pages")
    assert bad.status_code == 400 and "must be a JSON object" in bad.text and "Quire Vorführung" in bad.text
    assert admin.get("/api/pages/settings").json()["seo"]["title"] == "Old"
    assert post_form(ann, "/studio/pages/settings", fields, token_from="/studio/pages").status_code == 303
    settings = admin.get("/api/pages/settings").json()
    assert settings["seo"] == {"title": "Quire Demo", "image": "x.png"} and settings["seo_de"] == {"title": "Quire Vorführung"}
    assert settings["meta"] == {"theme": "dark", "siteName": "Quire"}
    assert settings["scripts"]["header"] == "<script src=/a.js></script>"
    deep = post_form(ann, "/studio/pages/settings", {**fields, "preview": "[" * 100 + "]" * 100}, token_from="/studio/pages")
    assert deep.status_code == 400


@pytest.mark.parametrize("path", ["/studio/pages/new", "/studio/menus"])
def test_hostile_form_values_are_a_4xx(app: Any, admin: Api, path: str) -> None:
    _site(admin)
    ann = logged_in(app)
    for data in ({"name": "\x00" * 10, "title": "\x00", "type": "layout", "state": "1"},
                 {"name": "x" * 100_000, "title": "t", "type": "layout", "state": "7"},
                 [("comp_component", "a")] * 600 + [("comp_label", "")] * 600 + [("comp_data", "")] * 600
                 + [("comp_children", "")] * 600):
        response = post_form(ann, path, data, token_from="/studio/pages")
        assert 400 <= response.status_code < 500, (path, response.status_code)
