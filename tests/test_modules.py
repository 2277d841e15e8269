"""Modules link through documented events and declared parts, not through
lists they append to each other: deleting a model empties the search
indexes of the model through `content.model.remove`, new locales index page
routes through `content.locales.save`, a hook can refuse either, and the
app is composed only from what the modules declare."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

import pytest

from quire import config, packages
from quire.app import MODULES, Quire
from quire.asgi import Route
from quire.config import load_settings
from quire.errors import ConfigError
from quire.events import Events, Reject
from tests.conftest import Api, create_item, put_model


def test_deleting_a_model_empties_its_search_index_through_the_event(admin: Api, events: Events) -> None:
    seen: list[str] = []
    events.on("content.model.remove", lambda model, **_: seen.append(model))
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "hello world"})
    assert admin.put("/api/searchmod/indexes/idx", json={"model": "posts", "fields": ["title"]}).is_success
    assert admin.post("/api/searchmod/indexes/idx/rebuild").is_success
    assert admin.get("/api/searchmod/search/idx", params={"q": "hello"}).json()["total"] == 1
    assert admin.delete("/api/system/models/posts").is_success
    assert seen == ["posts"]
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])  # the index follows the name again
    assert admin.get("/api/searchmod/search/idx", params={"q": "hello"}).json()["total"] == 0


def test_a_hook_refusing_the_model_removal_keeps_the_model(admin: Api, events: Events) -> None:
    def refuse(model: str, **_: Any) -> None:
        raise Reject(f"{model} is in use")

    events.on("content.model.remove", refuse)
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    item = create_item(admin, "posts", {"title": "kept"})
    response = admin.delete("/api/system/models/posts")
    assert response.status_code == 412
    assert response.json()["error"] == "posts is in use"
    assert admin.get(f"/api/content/item/posts/{item['_id']}").json()["title"] == "kept"


def test_a_coroutine_handler_of_a_synchronous_event_is_refused_when_subscribed() -> None:
    async def handler(**_: Any) -> None:
        return None

    with pytest.raises(TypeError, match="plain function"):
        Events().on("content.locales.save", handler)
    Events().on("content.item.remove", handler)  # an event sent with `emit` takes coroutines


def test_new_locales_index_page_routes_through_the_event(admin: Api, quire: Quire) -> None:
    seen: list[list[str]] = []
    quire.events.on("content.locales.save", lambda codes, **_: seen.append(codes))
    assert admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}]).is_success
    assert seen == [["de"]]
    page = admin.post("/api/pages/page", json={"data": {"title": "Über", "slug": "about", "slug_de": "ueber",
                                                          "type": "layout", "_state": 1}}).json()
    assert admin.get("/api/pages/page", params={"route": "/ueber", "locale": "de"}).json()["_id"] == page["_id"]


def test_the_app_is_composed_from_what_the_modules_declare(data_dir: Any) -> None:
    # Quire's own modules (those of installed packages off: tests/examples has theirs)
    quire = Quire(load_settings(data_dir, env={"QUIRE_MODULES_PACKAGES": "false"}))
    try:
        assert [m.name for m in quire.modules] == [m.name for m in MODULES]
        declared = {p for m in MODULES for p in m.permissions}
        assert quire.auth.permissions == declared
        assert "assets/upload" in declared and "searchmod/manage" in declared
    finally:
        quire.close()


def test_a_module_left_out_of_the_list_is_gone_from_routes_and_the_document(data_dir: Any) -> None:
    from quire import app as app_module
    from quire.app import build_app

    without = [m for m in MODULES if m.name != "l10n"]
    original = app_module.MODULES
    app_module.MODULES = without
    try:
        app = build_app(load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true"}))
    finally:
        app_module.MODULES = original
    try:
        paths = {r.path for r in app.routes if isinstance(r, Route)}
        assert not any(p.startswith("/api/l10n") for p in paths)
        assert "/api/content/items/{model}" in paths
        from tests.client import TestClient

        with TestClient(app) as client:
            document = client.get("/api/openapi.json").json()
            assert not any(p.startswith("/api/l10n") for p in document["paths"])
            assert "/api/system/healthcheck" in document["paths"]
            assert client.get("/api/l10n/projects").status_code == 404
    finally:
        app.state.quire.close()


def test_a_broken_package_left_out_is_never_imported_and_its_section_stays_unread(
        data_dir: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package that cannot be imported stops the start with
    its name; turned off or skipped, it is not imported and the site
    starts, its settings section kept in the file unread."""
    broken = EntryPoint("brokenmod", "quire_no_such_package_here:module", "quire.modules")
    monkeypatch.setattr(config, "entry_points", lambda group: [broken])
    monkeypatch.setattr(packages, "entry_points", lambda group: [broken])
    packages.discovered.cache_clear()
    config._import_module_packages.cache_clear()  # once a process and choice, as it runs
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "quire.toml").write_text("[brokenmod]\nanything = 1\n")
        with pytest.raises(ConfigError, match=r"entry point 'brokenmod'\) cannot be loaded: ModuleNotFoundError"):
            config.load_settings(data_dir, env={})
        for env in ({"QUIRE_MODULES_PACKAGES": "false"}, {"QUIRE_MODULES_SKIP": "brokenmod"}):
            quire = Quire(config.load_settings(data_dir, env=env))
            try:
                assert [m.name for m in quire.modules] == [m.name for m in MODULES]
            finally:
                quire.close()
        (data_dir / "quire.toml").write_text("[nosuchsection]\nanything = 1\n")
        with pytest.raises(ConfigError, match=r"unknown section \[nosuchsection\]"):
            config.load_settings(data_dir, env={"QUIRE_MODULES_PACKAGES": "false"})
    finally:
        packages.discovered.cache_clear()
        config._import_module_packages.cache_clear()
