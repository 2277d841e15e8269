"""The `quire` command line: its commands run in this process as `quire`
runs them (tests/commands.py), and once as a real subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quire.app import build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.commands import run_quire

quire = run_quire


def test_quire_runs_as_a_process(tmp_path: Path) -> None:
    """`python -m quire` as a user runs it: its help, and a key printed
    alone on the last line for scripts (docs/cli.md)."""
    assert "usage: quire" in quire("--help", process=True).stdout
    out = quire("keys", "create", "--name", "ci", "--role", "admin", "--data", str(tmp_path / "d"),
                process=True).stdout
    assert out.strip().splitlines()[-1].startswith("qk_")


@pytest.mark.parametrize(
    "command",
    [[], ["serve"], ["init"], ["demo"], ["keys"], ["keys", "create"], ["keys", "list"], ["keys", "delete"],
     ["users"], ["users", "create"], ["users", "passwd"], ["users", "list"], ["models"], ["export"], ["import"],
     ["migrate"]],
)
def test_every_command_has_useful_help(command: list[str]) -> None:
    out = quire(*command, "--help").stdout
    assert "usage: quire" in out
    assert "--data" in out or command in ([], ["keys"], ["users"])


def test_keys_create_prints_the_key_alone_on_the_last_line_and_it_works(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    out = quire("keys", "create", "--name", "ci", "--role", "admin", "--data", data).stdout
    key = out.strip().splitlines()[-1]
    assert key.startswith("qk_") and " " not in key
    app = build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"}))
    client = TestClient(app)
    assert client.get("/api/system/models", headers={"api-key": key}).status_code == 200
    listed = quire("keys", "list", "--data", data).stdout
    assert "ci" in listed and key not in listed
    key_id = listed.split()[0]
    quire("keys", "delete", key_id, "--data", data)
    app.state.quire.store.refresh()
    assert client.get("/api/system/models", headers={"api-key": key}).status_code == 401
    app.state.quire.close()


def test_keys_create_with_unknown_role_fails_clearly(tmp_path: Path) -> None:
    result = quire("keys", "create", "--name", "x", "--role", "ghost", "--data", str(tmp_path), check=False)
    assert result.returncode == 1
    assert "Role ghost does not exist" in result.stderr


def test_users_create_reads_password_from_stdin_or_generates_one(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    out = quire("users", "create", "--user", "ann", "--email", "ann@example.org", "--role", "admin",
                "--data", data, stdin="correct horse battery\n").stdout
    assert "Created user ann" in out and "Password" not in out
    out = quire("users", "create", "--user", "bob", "--email", "bob@example.org", "--role", "admin",
                "--data", data, stdin="").stdout
    assert "Password: " in out
    app = build_app(load_settings(data, env={}))
    try:
        assert app.state.quire.users.verify_password("ann", "correct horse battery") is not None
        assert app.state.quire.users.verify_password("ann", "wrong password") is None
        stored = app.state.quire.users.users.find_one({"user": "ann"})
        assert stored["password"].startswith("$argon2")
    finally:
        app.state.quire.close()


def test_users_passwd_sets_a_new_password_and_ends_sessions_and_list_shows_users(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    quire("users", "create", "--user", "ann", "--email", "ann@example.org", "--role", "admin",
          "--data", data, stdin="first password\n")
    app = build_app(load_settings(data, env={}))
    try:
        sessions = app.state.quire.sessions
        token, _ = sessions.start(app.state.quire.users.by_name("ann"))
        out = quire("users", "passwd", "--user", "ann", "--data", data, stdin="second password\n").stdout
        assert "1 session(s) ended" in out and "Password" not in out
        app.state.quire.store.refresh()
        assert sessions.lookup(token) is None
        assert app.state.quire.users.verify_password("ann", "first password") is None
        assert app.state.quire.users.verify_password("ann", "second password") is not None
    finally:
        app.state.quire.close()
    generated = quire("users", "passwd", "--user", "ann", "--data", data, stdin="").stdout
    assert "Password: " in generated
    missing = quire("users", "passwd", "--user", "nobody", "--data", data, stdin="x" * 10, check=False)
    assert missing.returncode == 1 and "User nobody not found" in missing.stderr
    listed = quire("users", "list", "--data", data).stdout
    assert "ann <ann@example.org>" in listed and "admin" in listed and "$argon2" not in listed


def test_demo_prints_the_admin_login_and_it_works(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    out = quire("demo", "--data", data).stdout
    password = out.split("log in as user admin, password ")[1].split()[0]
    app = build_app(load_settings(data, env={}))
    try:
        assert app.state.quire.users.verify_password("admin", password) is not None
        editor = app.state.quire.auth.role_identity("editor", "u1", "eve")
        assert editor.can("content/posts/update") and editor.can("content/posts/publish")
        assert not editor.can("content/posts/delete") and not editor.can("system/manage")
    finally:
        app.state.quire.close()
    again = quire("demo", "--data", data).stdout.split("password ")[-1].split()[0]
    assert again != password  # new on every run
    # the posts' live preview: the example site page, where the demo is served (again on every run)
    quire("demo", "--data", data, env={"QUIRE_SERVER_PORT": "9123"})
    app = build_app(load_settings(data, env={}))
    try:
        assert app.state.quire.models.get("posts").preview == [{
            "name": "Demo site", "uri": "http://127.0.0.1:9123/demo/preview?model={model}&id={id}&token={token}"}]
    finally:
        app.state.quire.close()


def test_demo_prints_the_key_on_its_last_line_and_the_admin_url_of_the_settings(tmp_path: Path) -> None:
    # docs/cli.md: KEY=$(quire demo --data ./demo | tail -1)
    data = tmp_path / "d"
    data.mkdir()
    (data / "quire.toml").write_text('[server]\nport = 18080\n')
    out = quire("demo", "--data", str(data)).stdout
    key = out.strip().splitlines()[-1]
    assert key.startswith("qk_") and " " not in key
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        assert TestClient(app).get("/api/system/models", headers={"api-key": key}).status_code == 200
    finally:
        app.state.quire.close()
    assert "http://127.0.0.1:18080/" in out
    assert ":8080" not in out


def test_export_then_import_moves_a_project(tmp_path: Path) -> None:
    source, target = str(tmp_path / "a"), str(tmp_path / "b")
    quire("demo", "--data", source)
    bundle = tmp_path / "bundle.json"
    bundle.write_text(quire("export", "--data", source).stdout)
    parsed = json.loads(bundle.read_text())
    assert {m["name"] for m in parsed["models"]} == {"authors", "posts", "settings", "nav"}
    assert len(parsed["items"]["posts"]) == 5  # drafts are exported too
    out = quire("import", str(bundle), "--data", target).stdout
    assert "4 models" in out
    app = build_app(load_settings(target, env={}))
    try:
        client = TestClient(app)
        posts = client.get("/api/content/items/posts").json()  # public read granted by the demo role
        assert len(posts) == 4
        assert {p["_id"] for p in posts} <= {p["_id"] for p in parsed["items"]["posts"]}
        assert client.get("/api/content/items/posts?locale=de&limit=1").json()[0]["title"] == "Hallo, Quire"
        # pages (with their German routes), the menu, page settings and translations came along
        assert "6 pages, 1 menus" in out and "1 translation projects" in out
        routes = client.get("/api/pages/routes?locale=de").json()["de"]
        assert [r["route"] for r in routes] == [
            r["_r_de"] if "_r_de" in r else r["_r"] for r in parsed["pages"] if r["_state"] == 1
        ]
        assert "/ueber-uns/team" in [r["route"] for r in routes]
        menu = client.get("/api/pages/menu/main?locale=de").json()
        assert [link["route"] for link in menu["links"]][:3] == ["/", "/blog", "/ueber-uns"]
        assert client.get("/api/pages/settings").json()["seo"] == parsed["pageSettings"]["seo"]
        assert client.get("/api/l10n/project/site/de").json()["nav.about"] == "Über uns"
        assert client.get("/api/l10n/project/site").json() == {
            key: {loc: values.get(loc) for loc in ("en", "de", "fr")}
            for key, values in parsed["l10n"][0]["keys"].items()
        }
    finally:
        app.state.quire.close()


def test_import_of_a_non_bundle_fails_without_changes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"models": []}')
    result = quire("import", str(bad), "--data", str(tmp_path / "d"), check=False)
    assert result.returncode == 1 and "Not a Quire bundle" in result.stderr


def test_bad_configuration_stops_with_the_key_named(tmp_path: Path) -> None:
    (tmp_path / "quire.toml").write_text("[server]\nport = 99999\n")
    result = quire("models", "--data", str(tmp_path), check=False)
    assert result.returncode == 2
    assert "server.port" in result.stderr


def test_import_of_a_missing_file_is_one_clear_line(tmp_path: Path) -> None:
    result = quire("import", str(tmp_path / "missing.json"), "--data", str(tmp_path / "d"), check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot read") and "Traceback" not in result.stderr


def test_models_indexes_lists_origin_fields_and_size(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    quire("demo", "--data", data)
    out = quire("models", "indexes", "posts", "--data", data).stdout.splitlines()
    assert out[0].split() == ["model", "origin", "size", "last", "used", "fields"]
    rows = [line.split() for line in out[1:]]
    assert any(r[1] == "built-in" and r[-1] == "_state" for r in rows)
    assert any(r[1] == "declared" for r in rows)
    assert all(r[0] == "posts" for r in rows)
    everything = quire("models", "indexes", "--data", data).stdout
    assert {"authors", "posts"} <= {line.split()[0] for line in everything.splitlines()[1:]}
    missing = quire("models", "indexes", "nope", "--data", data, check=False)
    assert missing.returncode == 1 and "nope" in missing.stderr and "Traceback" not in missing.stderr
    stray = quire("models", "list", "posts", "--data", data, check=False)
    assert stray.returncode == 2 and "Traceback" not in stray.stderr
