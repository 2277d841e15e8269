"""Pages, menus and page settings travel in bundles: an export imported
into an empty instance answers the same routes, menus and settings; routes
are recomputed on import, and a bad page stops the whole import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from quire.app import Quire
from quire.bundle import export_bundle, import_bundle
from quire.errors import ApiError
from quire.events import Events
from tests.conftest import Api, create_item, put_model
from tests.pages.conftest import DE, all_stored, custom_app, make_page, page_id_at, set_locales


def export(quire: Quire) -> dict[str, Any]:
    return orjson.loads(b"".join(export_bundle(quire)))  # type: ignore[no-any-return]


def build(api: Api) -> dict[str, Any]:
    set_locales(api, DE)
    put_model(api, "posts", type="collection", fields=[{"name": "slug", "type": "text"}])
    create_item(api, "posts", {"slug": "hello"})
    home = make_page(api, title="Home", slug="")
    about = make_page(api, title="About", slug_de="ueber-uns", _pid=home["_id"])
    team = make_page(api, title="Team", _pid=about["_id"], seo={"t": 1})
    make_page(api, title="Draft", _state=0)
    blog = make_page(api, title="Blog", type="collection", data={"model": "posts"})
    assert api.post("/api/pages/menu", json={"data": {"name": "main", "links": [
        {"title": "", "url": f"pages://{about['_id']}", "children": [{"url": f"pages://{team['_id']}"}]},
        {"title": "Ext", "url": "https://example.org"}]}}).status_code == 200
    assert api.post("/api/pages/settings", json={"data": {"seo": {"title": "Site"}, "seo_de": {"title": "Seite"}}}
                    ).status_code == 200
    return {"home": home, "about": about, "team": team, "blog": blog}


def answers(api: Api) -> dict[str, Any]:
    settings = api.get("/api/pages/settings").json()
    settings.pop("_modified")
    return {
        "routes": api.get("/api/pages/routes").json(),
        "pages": sorted(api.get("/api/pages/pages").json(), key=lambda p: p["_id"]),
        # menus are imported by name, as new menus (ids and times are not kept)
        "menus": [{k: v for k, v in m.items() if k not in ("_id", "_created", "_modified")}
                  for m in api.get("/api/pages/menus", params={"locale": "de"}).json()],
        "settings": settings,
        "sitemap": api.get("/api/pages/sitemap").json(),
    }


@pytest.mark.anyio
async def test_export_then_import_reproduces_pages_menus_and_settings(
    admin: Api, quire: Quire, tmp_path: Path
) -> None:
    build(admin)
    bundle = export(quire)
    assert [p["title"] for p in bundle["pages"]] == ["Home", "About", "Team", "Draft", "Blog"]
    assert [m["name"] for m in bundle["menus"]] == ["main"]
    assert bundle["pageSettings"]["seo_de"] == {"title": "Seite"}
    with custom_app(tmp_path / "other", {}) as (other, other_quire):
        counts = await import_bundle(other_quire, bundle)
        assert (counts["pages"], counts["menus"]) == (5, 1)
        assert answers(other) == answers(admin)
        assert {p["_id"]: p for p in all_stored(other_quire)} == {p["_id"]: p for p in all_stored(quire)}
        assert page_id_at(other, "/ueber-uns/team", locale="de") == page_id_at(admin, "/ueber-uns/team",
                                                                                 locale="de")
        assert other.get("/api/pages/page", params={"route": "/blog/hello"}).json()["data"]["item"]["slug"] == "hello"


@pytest.mark.anyio
async def test_import_keeps_the_default_list_order(admin: Api, quire: Quire, tmp_path: Path) -> None:
    build(admin)
    make_page(admin, title="Last top-level")
    source = [p["title"] for p in admin.get("/api/pages/pages").json()]
    assert source == ["Home", "About", "Team", "Blog", "Last top-level"]
    with custom_app(tmp_path / "other", {}) as (other, other_quire):
        await import_bundle(other_quire, export(quire))
        # actual: ['Last top-level', 'Blog', 'Home', 'About', 'Team']
        assert [p["title"] for p in other.get("/api/pages/pages").json()] == source


@pytest.mark.anyio
async def test_import_recomputes_routes(admin: Api, quire: Quire, tmp_path: Path) -> None:
    site = build(admin)
    bundle = export(quire)
    for page in bundle["pages"]:
        page["_r"] = "/stale"
        page.pop("_r_de", None)
    about = next(p for p in bundle["pages"] if p["_id"] == site["about"]["_id"])
    about["slug"] = "company"
    with custom_app(tmp_path / "other", {}) as (other, other_quire):
        await import_bundle(other_quire, bundle)
        routes = other.get("/api/pages/routes").json()
        assert [e["route"] for e in routes["default"]] == ["/", "/company", "/company/team", "/blog"]
        assert [e["route"] for e in routes["de"]] == ["/", "/ueber-uns", "/ueber-uns/team", "/blog"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "spoil",
    [
        lambda pages: pages[2].update({"slug": pages[1]["slug"], "_pid": pages[1]["_pid"]}),  # route taken
        lambda pages: pages[1].update({"colour": "red"}),  # unknown field
        lambda pages: pages[1].update({"_pid": "0" * 24}),  # parent missing
        lambda pages: pages[1].update({"title": ""}),  # title required
        lambda pages: pages.append({"title": "No id"}),  # no _id
    ],
)
async def test_a_bad_page_stops_the_whole_import(admin: Api, quire: Quire, tmp_path: Path, spoil: Any) -> None:
    build(admin)
    bundle = export(quire)
    spoil(bundle["pages"])
    with custom_app(tmp_path / "other", {}) as (other, other_quire):
        with pytest.raises(ApiError):
            await import_bundle(other_quire, bundle)
        assert all_stored(other_quire) == []
        assert other_quire.store.collection("pages/menus").find() == []
        assert other_quire.models.find("posts") is None


@pytest.mark.anyio
async def test_import_emits_page_save_events(admin: Api, quire: Quire, tmp_path: Path) -> None:
    build(admin)
    bundle = export(quire)
    events = Events()
    seen: list[str] = []
    events.on("pages.page.save.before", lambda page, **_: seen.append(page["title"]))
    with custom_app(tmp_path / "other", {}, events) as (_, other_quire):
        await import_bundle(other_quire, bundle)
    assert sorted(seen) == ["About", "Blog", "Draft", "Home", "Team"]
