"""`quire import --from-cockpit`: what comes over besides the API answers
(assets with their files, folders, focal points; keys hashed; roles), the
report and the plan, running it again, and the faults an operator meets."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from quire.app import build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.cockpit.conftest import FACTS, KEYS, SITE, Imported, copy_site
from tests.commands import run_quire


def _notes(imported: Imported, kind: str) -> dict[str, str]:
    return {n["where"]: n["what"] for n in imported.report["notes"] if n["kind"] == kind}


def test_the_summary_names_what_came_over(imported: Imported) -> None:
    assert "Imported 2 locales, 5 models, 21 items, 3 asset folders, 5 assets, 2 roles, 2 API keys" in imported.out
    assert imported.report["imported"] == {"locales": 2, "models": 5, "items": 21, "asset folders": 3,
                                           "assets": 5, "roles": 2, "API keys": 2, "forms": 0,
                                           "form submissions": 0}


def test_models_keep_every_field_type_and_option(imported: Imported) -> None:
    posts = imported.get("/api/system/models/posts", "admin").json()
    fields = {f["name"]: f for f in posts["fields"]}
    assert {n: f["type"] for n, f in fields.items()} == {
        "title": "text", "excerpt": "longtext", "content": "wysiwyg", "snippet": "code", "accent": "color",
        "publishDate": "date", "eventStart": "datetime", "readingTime": "time", "rating": "number",
        "featured": "boolean", "category": "select", "topics": "select", "tags": "tags", "seo": "set",
        "specs": "table", "extra": "object", "links": "json", "cover": "asset", "gallery": "asset",
        "author": "contentItemLink", "coauthors": "contentItemLink"}
    assert fields["title"]["i18n"] and fields["title"]["required"] and fields["title"]["label"] == "Title"
    assert fields["title"]["opts"]["maxlength"] == 120 and fields["title"]["group"] == "Content"
    assert fields["topics"]["multiple"] and fields["gallery"]["multiple"] and fields["coauthors"]["multiple"]
    assert fields["category"]["default"] == "news"
    assert [s["name"] for s in fields["seo"]["opts"]["fields"]] == ["title", "description", "noindex"]
    assert posts["preview"][0] == {"name": "Website", "uri": "https://example.test/blog/{_id}"}
    assert posts["meta"]["group"] == "Blog" and posts["meta"]["color"] == "#2196f3"
    assert imported.get("/api/system/models/navigation", "admin").json()["type"] == "tree"
    assert imported.get("/api/system/models/site", "admin").json()["type"] == "singleton"


def test_the_report_names_what_did_not_come_over_as_it_was(imported: Imported) -> None:
    types = _notes(imported, "type")
    assert "'nav'" in types["posts.links"] and "'rating'" in types["widgets.score"]
    # the fixture's layout values are not blocks of Cockpit's documented shape (data, not props): kept as json
    assert "not blocks Quire reads" in _notes(imported, "field")["widgets.layout"]
    # Cockpit's condition (JavaScript) came over as a showWhen rule
    fields = {f["name"]: f for f in imported.get("/api/system/models/posts", "admin").json()["fields"]}
    assert fields["eventStart"]["showWhen"] == {"==": [{"var": "category"}, "events"]}
    assert "posts.eventStart" not in _notes(imported, "field")
    assert "users are not imported" in _notes(imported, "collection")["system/users"]
    left_out = [n for n in imported.report["notes"] if n["kind"] == "asset"]
    assert {n["value"] for n in left_out} >= {"Titelbild", "Image principale"}  # values kept in the report


def test_assets_come_with_their_files_folders_and_focal_point(imported: Imported) -> None:
    hero = FACTS["assets"]["hero-image.png"]
    asset = imported.get(f"/api/assets/{hero['_id']}", "admin").json()
    assert asset["path"] == hero["path"] and asset["folder"] == hero["folder"]
    assert asset["title"] == "Hero image" and asset["altText"] == "Red to blue gradient"
    assert asset["tags"] == ["hero", "gradient"] and asset["fp"] == {"x": 0.75, "y": 0.3333}
    assert (asset["width"], asset["height"], asset["mime"]) == (40, 30, "image/png")
    for name, entry in FACTS["assets"].items():
        stored = imported.data / "uploads" / entry["path"].lstrip("/")
        assert stored.read_bytes() == (SITE / "storage" / "uploads" / entry["path"].lstrip("/")).read_bytes(), name
    folders = {f["name"]: f for f in imported.get("/api/assets/folders", "admin").json()}
    assert folders["Photos"]["parent"] == folders["Media"]["_id"] and folders["Media"]["parent"] is None
    # a generated size of the imported picture
    assert imported.get(f"/api/assets/image/{hero['_id']}", "reader", w="8", o="1").status_code == 200


def test_keys_keep_working_and_are_stored_hashed(imported: Imported) -> None:
    assert imported.get("/api/content/items/posts", "reader").status_code == 200
    assert imported.get("/api/content/items/authors", "reader").status_code == 403  # as in Cockpit
    write = imported.client.post("/api/content/item/posts", json={"data": {"title": "x"}},
                                 headers={"api-key": KEYS["reader"]})
    assert write.status_code == 403
    database = (imported.data / "quire.db").read_bytes()
    for key in KEYS.values():
        assert key.encode() not in database
    listed = {k["name"]: k for k in imported.get("/api/system/keys", "admin").json()}
    assert listed["Website (read only)"]["role"] == "reader" and listed["Website (read only)"]["hint"] == "b002"


def test_roles_carry_their_permissions(imported: Imported) -> None:
    roles = {r["name"]: r["permissions"] for r in imported.get("/api/system/roles", "admin").json()}
    assert roles["reader"] == {"content/posts/read": True, "content/navigation/read": True,
                               "content/site/read": True, "assets/read": True}
    assert roles["editor"]["content/navigation/update"] and roles["editor"]["assets/edit"]


def test_dry_run_prints_the_plan_and_stores_nothing(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    data = tmp_path / "data"
    done = run_quire("import", "--data", str(data), "--from-cockpit", str(site), "--dry-run")
    assert "model posts: collection, 21 fields, 5 items" in done.stdout
    assert "Dry run: nothing stored" in done.stdout
    assert _stored_models(data) == []
    uploads = data / "uploads"
    assert not uploads.exists() or not any(path.is_file() for path in uploads.rglob("*"))
    assert json.loads((data / "cockpit-import-report.json").read_text())["dry_run"] is True


def test_running_it_again_changes_nothing_but_revisions(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    data = tmp_path / "data"
    run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    client = TestClient(app)
    admin = {"api-key": KEYS["admin"]}
    before = client.get("/api/content/items/posts", headers=admin).json()
    again = run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    assert "21 items" in again.stdout
    app.state.quire.store.refresh()
    after = client.get("/api/content/items/posts", headers=admin).json()
    assert [{k: v for k, v in p.items() if k != "_rev"} for p in after] == \
        [{k: v for k, v in p.items() if k != "_rev"} for p in before]
    assert [p["_rev"] for p in after] == [p["_rev"] + 1 for p in before]
    assert len(client.get("/api/assets", headers=admin).json()) == 5
    assert len(client.get("/api/system/keys", headers=admin).json()) == 2
    app.state.quire.close()


def test_a_folder_that_is_not_cockpit_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    done = run_quire("import", "--data", str(tmp_path / "d"), "--from-cockpit", str(tmp_path / "site"), check=False)
    assert done.returncode == 1
    assert "is not a Cockpit folder: it has no storage/data" in done.stderr
    done = run_quire("import", "--data", str(tmp_path / "d"), "--from-cockpit", str(tmp_path / "nope"), check=False)
    assert done.returncode == 1 and "does not exist" in done.stderr


def test_a_corrupt_database_stores_nothing(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    content = site / "storage" / "data" / "content.sqlite"
    content.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    data = tmp_path / "data"
    done = run_quire("import", "--data", str(data), "--from-cockpit", str(site), check=False)
    assert done.returncode == 1
    assert "content.sqlite" in done.stderr and "Traceback" not in done.stderr
    assert _stored_models(data) == []


def _stored_models(data: Path) -> list[str]:
    if not (data / "quire.db").exists():
        return []
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        return [m.name for m in app.state.quire.models.all()]
    finally:
        app.state.quire.close()


def test_a_broken_document_and_a_missing_upload_are_reported_and_the_rest_comes(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    hero = FACTS["assets"]["hero-image.png"]
    (site / "storage" / "uploads" / hero["path"].lstrip("/")).unlink()
    conn = sqlite3.connect(site / "storage" / "data" / "content.sqlite")
    conn.execute("INSERT INTO collections_authors (document) VALUES ('{not json')")
    conn.commit()
    conn.close()
    data = tmp_path / "data"
    done = run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    assert "4 assets" in done.stdout and "21 items" in done.stdout
    report = json.loads((data / "cockpit-import-report.json").read_text())
    about = {n["where"]: n["what"] for n in report["notes"]}
    assert "its file is missing" in about[hero["path"]]
    assert any(w.startswith("content/collections/authors row") and "not JSON" in about[w] for w in about)


def test_a_model_file_with_php_code_is_refused_naming_the_file(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    (site / "storage" / "content" / "evil.model.php").write_text("<?php return ['name' => system('id')];")
    done = run_quire("import", "--data", str(tmp_path / "d"), "--from-cockpit", str(site), check=False)
    assert done.returncode == 1
    assert "content/evil.model.php: line 1: 'system' is not a literal value" in done.stderr


def test_unknown_field_options_are_kept_and_unknown_keys_reported(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    model = site / "storage" / "content" / "authors.model.php"
    text = model.read_text().replace("'opts' => [", "'opts' => [\n        'sparkle' => 'yes',", 1)
    model.write_text(text.replace("'name' => 'authors',", "'name' => 'authors',\n  'workflow' => 'strict',", 1))
    data = tmp_path / "data"
    run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        name = next(f for f in app.state.quire.models.get("authors").fields if f["name"] == "name")
        assert name["opts"]["sparkle"] == "yes"
    finally:
        app.state.quire.close()
    report = json.loads((data / "cockpit-import-report.json").read_text())
    assert any(n["where"] == "authors" and "workflow" in n["what"] for n in report["notes"])


def test_hostile_values_in_items(tmp_path: Path) -> None:
    """A NUL in a text comes over as an API write would store it; an item
    larger than an API write may send, a lone surrogate (not JSON) and a
    value of the wrong type are left out and reported with what was there."""
    site = copy_site(tmp_path / "cockpit")
    conn = sqlite3.connect(site / "storage" / "data" / "content.sqlite")
    rows = {json.loads(doc)["name"]: (row, json.loads(doc))
            for row, doc in conn.execute("SELECT id, document FROM collections_authors")}
    row, ada = rows["Ada Lovelace"]
    conn.execute("UPDATE collections_authors SET document = ? WHERE id = ?",
                 (json.dumps({**ada, "name": "Ada\u0000Lovelace"}), row))
    row, grace = rows["Grace Hopper"]
    conn.execute("UPDATE collections_authors SET document = ? WHERE id = ?",
                 (json.dumps({**grace, "bio": "<p>" + "x" * 11_000_000 + "</p>"}), row))
    conn.execute("INSERT INTO collections_authors (document) VALUES (?)",
                 ('{"_id": "6b0bf0386860000000000001", "name": "\\ud800", "_state": 1}',))
    conn.execute("INSERT INTO collections_authors (document) VALUES (?)",
                 ('{"_id": "6b0bf0386860000000000002", "name": {"first": "Ann"}, "_state": 1}',))
    conn.commit()
    conn.close()
    data = tmp_path / "data"
    done = run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    report = json.loads((data / "cockpit-import-report.json").read_text())
    about = {n["where"]: n for n in report["notes"]}
    assert "more than an API write may send" in about[f"authors/{grace['_id']}"]["what"]
    assert any("not JSON" in n["what"] for n in report["notes"] if n["kind"] == "document")
    assert about["authors/6b0bf0386860000000000002 name"]["value"] == {"first": "Ann"}
    assert "model authors: collection, 3 fields, 2 items, 2 left out" in done.stdout, done.stdout
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        client = TestClient(app)
        stored = client.get(f"/api/content/item/authors/{ada['_id']}", headers={"api-key": KEYS["admin"]}).json()
        assert stored["name"] == "Ada\u0000Lovelace"
        assert client.get(f"/api/content/item/authors/{grace['_id']}",
                          headers={"api-key": KEYS["admin"]}).status_code == 404
    finally:
        app.state.quire.close()


def test_cockpits_public_key_becomes_the_public_role(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    conn = sqlite3.connect(site / "storage" / "data" / "system.sqlite")
    conn.execute("INSERT INTO api_keys (document) VALUES (?)", (json.dumps(
        {"name": "Public", "key": "public", "role": "reader", "meta": [], "_id": "6b0bf0386860000000000003"}),))
    conn.commit()
    conn.close()
    data = tmp_path / "data"
    done = run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    assert "2 API keys" in done.stdout
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        client = TestClient(app)
        assert client.get("/api/content/items/posts").status_code == 200  # no key, as in Cockpit
        assert client.get("/api/content/items/authors").status_code == 401
    finally:
        app.state.quire.close()


def test_the_plan_says_which_items_replace_the_sites_own(tmp_path: Path) -> None:
    """An item of the site with a Cockpit item's id is replaced in place
    (matched by id): the plan says so before anything is stored."""
    site = copy_site(tmp_path / "cockpit")
    data = tmp_path / "data"
    run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    again = run_quire("import", "--data", str(data), "--from-cockpit", str(site), "--dry-run")
    assert "model posts: collection, 21 fields, 5 items, 5 replacing items of the site with the same id" in again.stdout


def test_a_linked_upload_is_not_followed(tmp_path: Path) -> None:
    """An upload that is a link (to any file of the machine) is left out:
    its target would be served as the asset's file."""
    site = copy_site(tmp_path / "cockpit")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the web")
    portrait = FACTS["assets"]["portrait.jpg"]
    upload = site / "storage" / "uploads" / portrait["path"].lstrip("/")
    upload.unlink()
    upload.symlink_to(secret)
    data = tmp_path / "data"
    done = run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    assert "4 assets" in done.stdout
    assert not (data / "uploads" / portrait["path"].lstrip("/")).exists()


def test_a_folder_with_a_question_mark_and_hostile_php(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "odd?name")
    assert "model posts: collection, 21 fields, 5 items" in run_quire("import", "--data", str(tmp_path / "d"), "--from-cockpit", str(site),
                                   "--dry-run").stdout
    for text, message in [("<?php return [1e999 => 1];", "too large a number"),
                          ("<?php return " + "[" * 3000 + "];", "nested too deep"),
                          ('<?php return ["\\u{110000}" => 1];', "evil.model.php")]:
        (site / "storage" / "content" / "evil.model.php").write_text(text)
        done = run_quire("import", "--data", str(tmp_path / "d2"), "--from-cockpit", str(site), check=False)
        assert done.returncode == 1 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_blocks_of_cockpits_core_components_come_over_as_a_layout_field(tmp_path: Path) -> None:
    """A layout field whose values are blocks of Cockpit's core components
    (`component` and `data`, sections holding `children`) imports as a
    layout field, its blocks stored as an editor would have made them."""
    site = copy_site(tmp_path / "cockpit")
    conn = sqlite3.connect(site / "storage" / "data" / "content.sqlite")
    blocks = [
        {"component": "section", "data": {"class": "hero"}, "children": [
            {"component": "heading", "id": "h1", "data": {"text": "Welcome", "level": "1"}}]},
        {"component": "button", "id": "b1", "data": {"url": "/blog", "caption": "Read more", "target": "_self"}},
    ]
    for row, doc in list(conn.execute("SELECT id, document FROM collections_widgets")):
        widget = json.loads(doc)
        conn.execute("UPDATE collections_widgets SET document = ? WHERE id = ?",
                     (json.dumps({**widget, "layout": blocks if widget["layout"] else []}), row))
    conn.commit()
    conn.close()
    data = tmp_path / "data"
    run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    report = json.loads((data / "cockpit-import-report.json").read_text())
    assert not [n for n in report["notes"] if n["where"] == "widgets.layout"]
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        client = TestClient(app)
        admin = {"api-key": KEYS["admin"]}
        model = client.get("/api/system/models/widgets", headers=admin).json()
        assert {f["name"]: f["type"] for f in model["fields"]}["layout"] == "layout"
        hero = client.get("/api/content/items/widgets", params={"filter": '{"name": "Landing hero"}'},
                          headers=admin).json()[0]
        section, button = hero["layout"]
        assert section["children"][0]["data"] == {"text": "Welcome", "level": "1"}
        assert button["data"]["url"] == "/blog" and section["id"]  # an instance without an id got one
    finally:
        app.state.quire.close()
