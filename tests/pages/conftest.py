"""Fixtures and helpers of the pages suite: a German locale, page writes that
must succeed, a three-level page tree in two locales, and route look-ups."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire, build_app
from quire.config import load_settings
from quire.events import Events
from tests.client import TestClient
from tests.conftest import Api

DE = [{"i18n": "de", "name": "Deutsch"}]
W3C = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def set_locales(admin: Api, locales: list[dict[str, str]]) -> None:
    response = admin.put("/api/system/locales", json=locales)
    assert response.status_code == 200, response.text


@pytest.fixture
def de(admin: Api) -> Api:
    """The admin client, with the project locale `de` configured."""
    set_locales(admin, DE)
    return admin


def post_page(api: Api, data: Any) -> Any:
    return api.post("/api/pages/page", json={"data": data})


def make_page(api: Api, **data: Any) -> dict[str, Any]:
    response = post_page(api, data)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def update_page(api: Api, page_id: str, **data: Any) -> dict[str, Any]:
    return make_page(api, _id=page_id, **data)


def by_route(api: Api, route: str, **params: Any) -> Any:
    return api.get("/api/pages/page", params={"route": route, **params})


def page_id_at(api: Api, route: str, **params: Any) -> str | None:
    """The id of the page answered for `route`, or None on a 404."""
    response = by_route(api, route, **params)
    if response.status_code == 404:
        assert response.json() == {"error": "Page not found"}
        return None
    assert response.status_code == 200, response.text
    return response.json()["_id"]  # type: ignore[no-any-return]


def stored(quire: Quire, page_id: str) -> dict[str, Any] | None:
    """The page as stored in `pages/pages`, drafts included."""
    return quire.store.collection("pages/pages").get(page_id)


def all_stored(quire: Quire) -> list[dict[str, Any]]:
    return quire.store.collection("pages/pages").find()


def w3c(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body.get("error"), str) and body["error"]
    return body  # type: ignore[no-any-return]


@pytest.fixture
def tree(de: Api) -> dict[str, dict[str, Any]]:
    """A three-level tree in two locales:

        Home     ''                                /                    (de: /)
          News   news                              /news                (de: /news)
        About    about / ueber-uns                 /about               (de: /ueber-uns)
          Team   team / mannschaft                 /about/team          (de: /ueber-uns/mannschaft)
            Ann  ann                               /about/team/ann      (de: /ueber-uns/mannschaft/ann)
          Jobs   jobs                              /about/jobs          (de: /ueber-uns/jobs)
        Contact  contact / kontakt                 /contact             (de: /kontakt)
    """
    pages: dict[str, dict[str, Any]] = {}
    pages["home"] = make_page(de, title="Home", title_de="Startseite", slug="", slug_de="")
    pages["news"] = make_page(de, title="News", slug="news", _pid=pages["home"]["_id"])
    pages["about"] = make_page(de, title="About", title_de="Über uns", slug="about", slug_de="ueber-uns")
    pages["team"] = make_page(de, title="Team", title_de="Mannschaft", slug="team", slug_de="mannschaft",
                              _pid=pages["about"]["_id"])
    pages["ann"] = make_page(de, title="Ann", slug="ann", _pid=pages["team"]["_id"])
    pages["jobs"] = make_page(de, title="Jobs", slug="jobs", _pid=pages["about"]["_id"])
    pages["contact"] = make_page(de, title="Contact", title_de="Kontakt", slug="contact", slug_de="kontakt")
    return pages


@contextmanager
def custom_app(data_dir: Path, env: dict[str, str], events: Events | None = None) -> Iterator[tuple[Api, Quire]]:
    """An app built from settings with extra `QUIRE_*` variables, and an
    admin client for it."""
    settings = load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true", **env})
    application = build_app(settings, events or Events())
    quire: Quire = application.state.quire
    try:
        client = TestClient(application, raise_server_exceptions=False)
        key = str(quire.auth.create_key("custom admin", "admin")["key"])
        yield Api(client, key), quire
    finally:
        quire.close()
