"""Every studio screen is reachable from `/` by following links after
logging in, and no page reached answers a server error: a crawler that
follows the links of every page (GET only, this site only) over a demo-like
set of models of the three kinds."""

from __future__ import annotations

import re
from collections import deque
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

from quire.app import MODULES
from quire.asgi import Route
from tests.assets.helpers import solid, upload_one
from tests.conftest import Api, create_item, put_model
from tests.inbox.conftest import PDF, multipart
from tests.studio.conftest import logged_in

# every screen of the studio, whichever module declares it
STUDIO_ROUTES = [r for m in MODULES for r in m.routes if r.path.startswith("/studio")]

# Parts of pages (htmx fragments, files) rather than screens a user opens.
NOT_SCREENS = re.compile(r"^/studio/((static|pick|fragments)/|.*/(job|progress)$|.*/progress/\{token\}$"
                         r"|settings/spaces/tasks$|translate/tasks$)"
                         r"|^/studio/assets/(pick|upload|thumb/.*|\{id\}/crop)$")


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href"):
            self.hrefs.append(found["href"] or "")
        # a form that only reads (the bar's search box) leads to its page too
        if tag == "form" and (found.get("method") or "get").lower() == "get" and found.get("action"):
            self.hrefs.append(found["action"] or "")


def crawl(browser: Any, limit: int = 400, start: str = "/", linked: set[str] | None = None) -> dict[str, int]:
    """The pages reached from `start` by following links under it (their
    statuses); `linked` gets every path of this site a page links to."""
    seen: dict[str, int] = {}
    queue = deque([start])
    while queue and len(seen) < limit:
        path = queue.popleft()
        if path in seen:
            continue
        response = browser.get(path)
        seen[path] = response.status_code
        if response.status_code != 200 or "text/html" not in response.headers.get("content-type", ""):
            continue
        parser = Links()
        parser.feed(response.text)
        for href in parser.hrefs:
            target = urlsplit(urljoin("http://testserver" + path, href))
            if target.netloc != "testserver":
                continue
            if linked is not None:
                linked.add(target.path)
            if not target.path.startswith(start) or target.path.startswith(("/auth/logout", "/sso/", "/api/")):
                continue
            queue.append(target.path + (f"?{target.query}" if target.query else ""))
    return seen


def _screens() -> list[Route]:
    return [r for r in STUDIO_ROUTES
            if "GET" in r.methods and not NOT_SCREENS.match(r.path)]


def fill_site(admin: Api) -> None:
    """Something on every screen: models of the three kinds with items, a
    form with a submission, a locale, a search index, a page, menu and
    settings, a translation project, an asset and a webhook."""
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text"}, {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}])
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    put_model(admin, "settings", type="singleton", fields=[{"name": "site", "type": "text"}])
    author = create_item(admin, "authors", {"name": "Ann"})
    create_item(admin, "posts", {"title": "Hello", "author": {"_model": "authors", "_id": author["_id"]}})
    create_item(admin, "nav", {"label": "Home"})
    form = admin.post("/api/inbox/forms", json={"data": {"name": "Contact"}}).json()
    body, headers = multipart([("data[name]", "Ann"), ("data[cv]", "cv.pdf", PDF, "application/pdf")])
    assert admin.post(f"/api/inbox/submit/{form['token']}", content=body, headers=headers).status_code == 200
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])  # settings: a locale to remove
    admin.put("/api/searchmod/indexes/posts", json={"model": "posts", "fields": ["title"]})  # an index's page
    admin.post("/api/pages/page", json={"data": {"title": "About"}})
    admin.post("/api/pages/settings", json={"data": {"seo": {"title": "Site"}}})  # a history of the settings
    admin.post("/api/pages/menu", json={"data": {"name": "main", "links": [{"url": "/about", "title": "About"}]}})
    admin.put("/api/l10n/project/site", json={"locales": ["en", "de"], "keys": {"hi": {"en": "Hi"}}})
    upload_one(admin, "harbour.png", solid(8, 8), "image/png")
    # a webhook's page (an event nothing here sends: no delivery is tried)
    admin.post("/api/webhooks", json={"name": "Build", "url": "https://build.example/", "events": ["none.such"]})


def test_every_studio_screen_is_reached_from_the_dashboard(app: Any, admin: Api) -> None:
    fill_site(admin)
    admin.post("/api/system/spaces", json={"name": "shop"})  # a space's page
    ann = logged_in(app)
    seen = crawl(ann)
    errors = {path: status for path, status in seen.items() if status >= 500}
    assert not errors, errors
    missing = [r.path for r in _screens() if not any(r.regex.match(urlsplit(p).path) for p in seen)]
    assert not missing, f"studio screens no link leads to: {missing}"
