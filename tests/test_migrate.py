"""`quire migrate`: a demo site's SQLite database copied to PostgreSQL, an
app served from the copy, `--verify`, a second run after changes, a
tampered target, and the refusals. The command runs in process
(tests/commands.py), and once as a process of its own."""

from __future__ import annotations

import io
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.migrate import ID_ORDER, Progress, redacted, scrubbed
from quire.searchmod.pgengine import table_prefix
from quire.store import PostgresStore, SqliteStore
from tests.admin.conftest import SESSION_COOKIE, login, new_browser
from tests.client import TestClient
from tests.commands import run_quire

quire = run_quire


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A data dir made by `quire demo` (once per module), its admin API key
    and the admin user's password."""
    data = tmp_path_factory.mktemp("demo") / "site"
    out = quire("demo", "--data", str(data)).stdout
    password = out.split("log in as user admin, password ")[1].split()[0]
    return data, out.strip().splitlines()[-1], password


@pytest.fixture
def site(demo_site: tuple[Path, str, str], tmp_path: Path) -> tuple[Path, str, str]:
    """A copy of the demo site of the test's own (tests change it)."""
    data, key, password = demo_site
    mine = tmp_path / "site"
    shutil.copytree(data, mine)
    return mine, key, password


def app_on(data: Path, url: str = "", files: dict[str, str] | None = None) -> Any:
    env = {"QUIRE_SERVER_QUIET": "true", **(files or {})}
    if url:
        env["QUIRE_STORE_URL"] = url
    return build_app(load_settings(data, env=env))


@pytest.fixture
def apps() -> Iterator[Any]:
    made: list[Any] = []

    def make(data: Path, url: str = "", files: dict[str, str] | None = None) -> Any:
        made.append(app_on(data, url, files))
        return made[-1]

    yield make
    for app in made:
        app.state.quire.close()


def documents(store: SqliteStore | PostgresStore, names: list[str]) -> dict[str, list[dict[str, Any]]]:
    return {name: store.collection(name).find(None, ID_ORDER) for name in names}


def search_ids(client: TestClient, text: str, locale: str = "") -> list[str]:
    response = client.get("/api/searchmod/search/posts", params={"q": text, "locale": locale})
    assert response.status_code == 200, response.text
    return [hit["_id"] for hit in response.json()["hits"]]


def test_a_migrated_site_is_served_from_postgresql(site: tuple[Path, str, str], pg_url: str, apps: Any) -> None:
    data, key, password = site
    run = quire("migrate", "--data", str(data), "--to", pg_url, process=True)  # once as a user runs it
    # not a terminal: plain lines per collection, no bar drawn in place
    assert "content/posts: 5 documents" in run.stderr and "\r" not in run.stderr
    assert "Migrated " in run.stdout and "search indexes rebuilt: posts (4 items)" in run.stdout

    source = apps(data)
    target = apps(data, pg_url)
    assert type(target.state.quire.store).__name__ == "PostgresStore"
    was, now = TestClient(source), TestClient(target)
    headers = {"api-key": key}  # the key is stored hashed: the copy knows it
    for path in ("/api/content/items/posts?sort={\"published\":1}", "/api/content/items/authors",
                 "/api/content/item/settings", "/api/content/tree/nav", "/api/pages/pages", "/api/pages/menus",
                 "/api/pages/routes", "/api/assets", "/api/system/models", "/api/searchmod/indexes"):
        before, after = was.get(path, headers=headers), now.get(path, headers=headers)
        assert after.status_code == 200, (path, after.text)
        assert after.json() == before.json(), path
    asset = now.get("/api/assets", headers=headers).json()[0]
    assert asset["mime"] == "image/jpeg"
    # files stay in the data dir, which the app on PostgreSQL serves them from
    assert now.get(f"/storage/uploads{asset['path']}").content[:3] == b"\xff\xd8\xff"
    # search: rebuilt in PostgreSQL's engine, in both locales
    modelling = now.get("/api/content/items/posts", params={"filter": '{"slug": "modelling-content"}'},
                        headers=headers).json()[0]["_id"]
    assert search_ids(now, "modelling") == [modelling] == search_ids(was, "modelling")
    assert search_ids(now, "Inhalte", "de") == [modelling] == search_ids(was, "Inhalte", "de")
    assert sorted(search_ids(now, "howto")) == sorted(search_ids(was, "howto")) and len(search_ids(now, "howto")) == 2
    # declared indexes of the content models are there
    fields = {tuple(i["fields"]) for i in target.state.quire.models.indexes("posts")}
    assert ("_state", "slug") in fields or ("slug",) in fields

    verified = quire("migrate", "--data", str(data), "--to", pg_url, "--verify")
    assert "content/posts" in verified.stdout and "DIFFERS" not in verified.stdout
    assert "All " in verified.stdout and "byte for byte the same too" in verified.stdout
    assert redacted(pg_url) == pg_url in verified.stdout  # no password: the address as given

    # users log in with their passwords (which writes a session: the target now differs)
    browser = new_browser(target)
    assert login(browser, "admin", password).status_code == 303
    assert browser.cookies.get(SESSION_COOKIE)


def test_a_second_run_brings_the_target_up_to_date(site: tuple[Path, str, str], pg_url: str, apps: Any) -> None:
    data, key, _ = site
    quire("migrate", "--data", str(data), "--to", pg_url, "--batch", "2")
    source = apps(data)
    admin = TestClient(source, headers={"api-key": key})
    posts = {p["slug"]: p for p in admin.get("/api/content/items/posts").json()}
    added = admin.post("/api/content/item/posts", json={"data": {"title": "Zebra crossings", "slug": "zebra"}})
    assert added.status_code == 200, added.text
    edited = admin.post("/api/content/item/posts", json={"data": {
        "_id": posts["hello-quire"]["_id"], "title": "Hello again"}})
    assert edited.status_code == 200, edited.text
    assert admin.delete(f"/api/content/item/posts/{posts['quire-0-1']['_id']}").status_code == 200
    assert admin.put("/api/system/models/notes", json={"name": "notes", "fields": [
        {"name": "text", "type": "text"}], "indexes": ["text"]}).status_code == 200
    assert admin.post("/api/content/item/notes", json={"data": {"text": "a note"}}).status_code == 200

    again = quire("migrate", "--data", str(data), "--to", pg_url, "--batch", "2")
    assert "content/posts: 5 documents, 1 removed from the target" in again.stderr
    assert "content/notes: 1 documents" in again.stderr

    sqlite = source.state.quire.store
    names = sqlite.collection_names()
    target = apps(data, pg_url)
    copied = target.state.quire.store
    assert documents(copied, names) == documents(sqlite, names)
    now = TestClient(target)
    assert search_ids(now, "zebra") == [added.json()["_id"]]
    assert search_ids(now, "again") == [posts["hello-quire"]["_id"]]
    assert search_ids(now, "released") == []
    assert ("text",) in {tuple(i["fields"]) for i in target.state.quire.models.indexes("notes")}
    verified = quire("migrate", "--data", str(data), "--to", pg_url, "--verify")
    assert "DIFFERS" not in verified.stdout

    # a model deleted in the source: its collection leaves the target too
    assert admin.delete("/api/system/models/notes").status_code == 200
    third = quire("migrate", "--data", str(data), "--to", pg_url)
    assert "content/notes: dropped" in third.stderr
    assert "content/notes" not in target_names(pg_url)
    quire("migrate", "--data", str(data), "--to", pg_url, "--verify")

    # a search index deleted in the source: its tables and marks leave the target
    assert search_tables(pg_url, "posts")
    assert admin.delete("/api/searchmod/indexes/posts").status_code == 200
    fourth = quire("migrate", "--data", str(data), "--to", pg_url)
    assert "search indexes rebuilt: none" in fourth.stdout
    assert search_tables(pg_url, "posts") == []
    store = PostgresStore(pg_url)
    try:
        assert [k for k in store.meta_items() if k.startswith("searchmod/")] == []
    finally:
        store.close()


def target_names(url: str) -> list[str]:
    store = PostgresStore(url)
    try:
        return store.collection_names()
    finally:
        store.close()


def search_tables(url: str, index: str) -> list[str]:
    """The tables PostgreSQL's search engine holds for `index`."""
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' "
            "AND starts_with(relname, %s)", (table_prefix(index),))]


def test_verify_fails_on_a_tampered_target(site: tuple[Path, str, str], pg_url: str) -> None:
    data, _, _ = site
    quire("migrate", "--data", str(data), "--to", pg_url)
    store = PostgresStore(pg_url)
    try:
        authors = store.collection("content/authors")
        ada = authors.find({"name": "Ada Lovelace"})[0]
        authors.replace({**ada, "name": "Ada King"})
        store.collection("pages/pages").delete_many({"slug": ""})
    finally:
        store.close()
    verified = quire("migrate", "--data", str(data), "--to", pg_url, "--verify", check=False)
    assert verified.returncode == 1, verified.stdout + verified.stderr
    rows = {line.split()[0]: line for line in verified.stdout.splitlines() if line.strip()}
    assert rows["content/authors"].split()[1:] == ["2", "2", "DIFFERS"]
    assert rows["pages/pages"].split()[-1] == "DIFFERS"
    assert rows["content/posts"].split()[-1] == "same"
    assert "2 of " in verified.stdout
    # a run repairs it
    quire("migrate", "--data", str(data), "--to", pg_url)
    assert quire("migrate", "--data", str(data), "--to", pg_url, "--verify").returncode == 0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_refusals_are_clear_and_never_show_the_password(site: tuple[Path, str, str], tmp_path: Path) -> None:
    data, _, _ = site
    not_pg = quire("migrate", "--data", str(data), "--to", "mysql://root:pw@localhost/db", check=False)
    assert not_pg.returncode == 2 and "postgresql://" in not_pg.stderr and "Traceback" not in not_pg.stderr

    url = f"postgresql://quire:s3cr%40t-pass@127.0.0.1:{_closed_port()}/quire?connect_timeout=2"
    away = quire("migrate", "--data", str(data), "--to", url, check=False)
    assert away.returncode == 2, away.stderr
    assert "cannot reach postgresql://quire:***@127.0.0.1" in away.stderr
    assert "Traceback" not in away.stderr
    assert "s3cr" not in away.stderr + away.stdout

    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = quire("migrate", "--data", str(empty), "--to", url, check=False)
    assert nothing.returncode == 2 and "holds no database" in nothing.stderr
    assert not (empty / "quire.db").exists()  # refusing made none


def test_a_target_holding_another_sites_data_is_refused(site: tuple[Path, str, str], pg_url: str,
                                                        tmp_path: Path, apps: Any) -> None:
    data, _, _ = site
    other = apps(tmp_path / "other", pg_url)  # a site served from PostgreSQL already
    other.state.quire.auth.create_key("theirs", "admin")
    refused = quire("migrate", "--data", str(data), "--to", pg_url, check=False)
    # the key and its audit log entry
    assert refused.returncode == 2 and "already holds 2 documents" in refused.stderr
    assert [k["name"] for k in other.state.quire.auth.list_keys()] == ["theirs"]


def test_an_app_started_on_the_empty_target_first_is_no_obstacle(site: tuple[Path, str, str], pg_url: str,
                                                                 tmp_path: Path, apps: Any) -> None:
    data, _, _ = site
    apps(tmp_path / "other", pg_url)  # its modules make their (empty) collections
    quire("migrate", "--data", str(data), "--to", pg_url)
    quire("migrate", "--data", str(data), "--to", pg_url, "--verify")


def test_files_go_to_the_bucket_with_files(site: tuple[Path, str, str], pg_url: str, s3_env: dict[str, str],
                                           s3_server: Any, s3_bucket: str, tmp_path: Path, apps: Any) -> None:
    data, key, _ = site
    uploads = sorted(p.relative_to(data).as_posix() for p in (data / "uploads").rglob("*") if p.is_file())
    assert len(uploads) == 4
    run = quire("migrate", "--data", str(data), "--to", pg_url, "--files", env=s3_env)
    assert "files: 4 copied" in run.stderr and "[assets] storage" in run.stdout
    assert quire("migrate", "--data", str(data), "--to", pg_url, "--files", "--verify",
                 env=s3_env).stdout.count("DIFFERS") == 0
    # served from the bucket by an app with no files of its own
    elsewhere = apps(tmp_path / "elsewhere", pg_url, s3_env)
    client = TestClient(elsewhere)
    asset = client.get("/api/assets", headers={"api-key": key}).json()[0]
    assert client.get(f"/storage/uploads{asset['path']}").content[:3] == b"\xff\xd8\xff"
    # a second run copies nothing again; a file gone from the bucket is found and put back
    s3 = s3_server.client()
    try:
        s3.delete_object(Bucket=s3_bucket, Key=f"site/{uploads[0]}")
    finally:
        s3.close()
    broken = quire("migrate", "--data", str(data), "--to", pg_url, "--files", "--verify", check=False, env=s3_env)
    assert broken.returncode == 1 and "(files) uploads" in broken.stdout and "DIFFERS" in broken.stdout
    again = quire("migrate", "--data", str(data), "--to", pg_url, "--files", env=s3_env)
    assert "files: 1 copied" in again.stderr and "3 already there" in again.stderr
    quire("migrate", "--data", str(data), "--to", pg_url, "--files", "--verify", env=s3_env)


def test_files_without_a_bucket_is_refused(site: tuple[Path, str, str], pg_url: str) -> None:
    data, _, _ = site
    refused = quire("migrate", "--data", str(data), "--to", pg_url, "--files", check=False)
    assert refused.returncode == 2 and "[assets] storage" in refused.stderr


def test_redacted_hides_passwords_in_the_user_part_and_in_parameters() -> None:
    assert redacted("postgresql://ann:secret@db:5432/site") == "postgresql://ann:***@db:5432/site"
    assert redacted("postgresql://ann@db/site") == "postgresql://ann@db/site"
    assert "secret" not in redacted("postgres://db/site?user=ann&password=secret&sslmode=require")
    assert "sslmode=require" in redacted("postgres://db/site?user=ann&password=secret&sslmode=require")
    assert scrubbed('password "p%40ss" for p@ss refused', "postgresql://a:p%40ss@h/d") == \
        'password "***" for *** refused'


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_is_drawn_in_place_on_a_terminal_only() -> None:
    screen = _Terminal()
    bar = Progress(10, screen)
    bar.start("content/posts")
    bar.advance(5)
    bar.line("content/posts: 5 documents")
    bar.close()
    drawn = screen.getvalue()
    assert "\r" in drawn and "[###############---------------] 5/10 documents  content/posts" in drawn
    assert "content/posts: 5 documents\n" in drawn

    log = io.StringIO()
    plain = Progress(10, log)
    plain.start("content/posts")
    plain.advance(10)
    plain.line("content/posts: 10 documents")
    plain.close()
    assert log.getvalue() == "content/posts: 10 documents\n"
