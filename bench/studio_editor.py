#!/usr/bin/env python3
"""Benchmark of the studio's item editor: opening an item with 30 fields
of mixed types, and saving it from the editor's form.

In process: the ASGI app of a fresh data dir under bench/.work/editor, a
logged-in admin session (a TestClient), one model `articles` with 30
fields (localized texts, rich text, markdown, numbers, dates, a select,
tags, an object, a set, a table, an asset, a link, a repeater, variants)
and a German locale, and one item holding a value in every field. Then:

- opens: GET /studio/content/articles/item/{id}, `--opens` times;
- saves: POST of the page's own form with one field changed and the
  revision it started from (303 each), `--saves` times.

Times are server time: from the moment the app is called to the end of
its answer, measured around the ASGI app (the test client's own work is
left out). A run with the standard counts writes the "Studio: item
editor" section of docs/benchmarks.md (--no-docs to skip).

    .venv/bin/python bench/studio_editor.py
    .venv/bin/python bench/studio_editor.py --opens 20 --saves 20 --no-docs
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import DEFAULT_DOCS, ROOT, machine_paragraph, update_doc  # noqa: E402

sys.path.insert(0, str(ROOT))
STANDARD_OPENS = 100
STANDARD_SAVES = 100
WARM_UP = 5
PASSWORD = "correct horse battery"

FIELDS: list[dict[str, Any]] = [
    {"name": "title", "type": "text", "i18n": True, "required": True},
    {"name": "subtitle", "type": "text", "i18n": True},
    {"name": "slug", "type": "text"},
    {"name": "teaser", "type": "longtext", "i18n": True},
    {"name": "body", "type": "wysiwyg", "i18n": True},
    {"name": "notes", "type": "markdown"},
    {"name": "snippet", "type": "code", "opts": {"language": "javascript"}},
    {"name": "rating", "type": "number"},
    {"name": "price", "type": "number"},
    {"name": "views", "type": "number"},
    {"name": "featured", "type": "boolean"},
    {"name": "commentable", "type": "boolean"},
    {"name": "day", "type": "date"},
    {"name": "published", "type": "datetime"},
    {"name": "clock", "type": "time"},
    {"name": "category", "type": "select", "opts": {"options": ["news", "guides", "releases"]}},
    {"name": "labels", "type": "tags"},
    {"name": "tint", "type": "color"},
    {"name": "extra", "type": "object"},
    {"name": "seo", "type": "set", "group": "SEO", "opts": {"fields": [
        {"name": "keywords", "type": "text"}, {"name": "description", "type": "longtext"},
        {"name": "weight", "type": "number"}]}},
    {"name": "prices", "type": "table"},
    {"name": "picture", "type": "asset"},
    {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
    {"name": "links", "type": "text", "multiple": True},
    {"name": "hero", "type": "variants", "group": "Persona"},
    {"name": "summary", "type": "longtext", "group": "SEO"},
    {"name": "source", "type": "text", "group": "SEO"},
    {"name": "score", "type": "number", "group": "SEO"},
    {"name": "archived", "type": "boolean", "group": "SEO"},
    {"name": "review", "type": "date", "group": "SEO"},
]
assert len(FIELDS) == 30


def values(author_id: str, asset_id: str) -> dict[str, Any]:
    words = "The studio's editor opens every field type of the model at once, in every locale. " * 3
    return {
        "title": "An article with thirty fields", "title_de": "Ein Artikel mit dreißig Feldern",
        "subtitle": "Measured", "subtitle_de": "Gemessen", "slug": "thirty-fields",
        "teaser": words, "teaser_de": words, "body": f"<p>{words}</p><ul><li>one</li><li>two</li></ul>",
        "body_de": f"<p>{words}</p>", "notes": "# Notes\n\n" + words, "snippet": "const x = 1;\n" * 5,
        "rating": 4.5, "price": 19, "views": 12345, "featured": True, "commentable": False,
        "day": "2026-03-01", "published": "2026-03-01T10:30:00Z", "clock": "12:30",
        "category": "guides", "labels": ["news", "tips", "studio"], "tint": "#2f5bd3",
        "extra": {"a": [1, 2, 3], "b": {"c": "d"}},
        "seo": {"keywords": "cms, studio", "description": words, "weight": 3},
        "prices": [{"size": "S", "eur": 5}, {"size": "M", "eur": 7}],
        "picture": {"_id": asset_id}, "author": {"_model": "authors", "_id": author_id},
        "links": [f"https://example.org/{n}" for n in range(5)],
        "hero": {"persona:variants": [
            {"id": "guest", "label": "Guest", "audience": [], "data": {"heading": "Hello"}},
            {"id": "member", "label": "Member", "audience": ["member"], "data": {"heading": "Welcome back"},
             "meta": {"schedule": {"days": ["sat", "sun"], "timezone": "Europe/Berlin"}}}]},
        "summary": words, "source": "bench", "score": 7, "archived": False, "review": "2026-06-01",
    }


class Timed:
    """The ASGI app, timing every call from its start to its last message."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last = 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        began = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.last = time.perf_counter() - began


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark of the studio's item editor (see the docstring).")
    parser.add_argument("--opens", type=int, default=STANDARD_OPENS)
    parser.add_argument("--saves", type=int, default=STANDARD_SAVES)
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    args = parser.parse_args(argv)

    from PIL import Image
    from starlette.testclient import TestClient
    from tests.studio.editorform import EditorForm, post

    from quire.app import build_app
    from quire.auth.service import Identity
    from quire.config import load_settings
    from quire.content.service import ReadOptions

    admin = Identity("admin", key_id="bench")
    load = os.getloadavg()[0]
    work = ROOT / "bench" / ".work" / "editor"
    shutil.rmtree(work, ignore_errors=True)
    app = build_app(load_settings(work / "data", env={"QUIRE_SERVER_QUIET": "true"}))
    quire = app.state.quire
    timed = Timed(app)
    try:
        quire.locales.save([{"i18n": "de", "name": "Deutsch"}])
        quire.users.create({"user": "ann", "email": "ann@example.org", "role": "admin", "password": PASSWORD})
        client = TestClient(timed, base_url="http://testserver", follow_redirects=False)
        login_page = client.get("/auth/login").text
        csrf = login_page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        assert client.post("/auth/login", data={"csrf": csrf, "user": "ann", "password": PASSWORD}).status_code == 303
        from quire.content.models import parse_model
        quire.models.save(parse_model("authors", {"type": "collection", "fields": [{"name": "name", "type": "text"}]}))
        quire.models.save(parse_model("articles", {"type": "collection", "fields": FIELDS}))
        page = client.get("/studio/content/articles/item").text
        token = page.split('<meta name="csrf-token" content="', 1)[1].split('"', 1)[0]
        picture = io.BytesIO()
        Image.new("RGB", (320, 200), "#2f5bd3").save(picture, "PNG")
        asset = client.post("/studio/assets/upload", files={"file": ("cover.png", picture.getvalue(), "image/png")},
                            headers={"x-csrf-token": token}).json()
        author_form = EditorForm(client.get("/studio/content/authors/item").text).set("f.name", "Astrid Lindgren")
        author_id = post(client, author_form).headers["location"].rsplit("/", 1)[1]
        data = values(author_id, asset["_id"])
        # the item itself: written through the service, as the API writes it
        saved = asyncio.run(quire.content.save("articles", data, admin))
        url = f"/studio/content/articles/item/{saved['_id']}"

        opens: list[float] = []
        for n in range(WARM_UP + args.opens):
            response = client.get(url)
            assert response.status_code == 200, response.text[:500]
            if n >= WARM_UP:
                opens.append(timed.last)
        form = EditorForm(response.text)
        rev = int(form.get("_rev"))
        saves: list[float] = []
        for n in range(WARM_UP + args.saves):
            form.set("f.title", f"An article with thirty fields, saved {n} times").set("_rev", str(rev + n))
            answer = post(client, form)
            assert answer.status_code == 303, answer.text[:2000]
            if n >= WARM_UP:
                saves.append(timed.last)
        stored = quire.content.item_with_rev("articles", saved["_id"], ReadOptions(drafts=True), admin)[0]
        assert stored["title_de"] == data["title_de"] and stored["seo"] == data["seo"], stored
        size = len(response.content)
    finally:
        quire.close()

    rows = [("open the editor (GET, 30 fields, 2 locales)", opens), ("save from the editor (POST, 303)", saves)]
    table = "| request | runs | p50 ms | p99 ms | mean ms |\n|---|---:|---:|---:|---:|\n" + "".join(
        f"| {what} | {len(s)} | {statistics.median(s) * 1000:.1f} | {percentile(s, 99) * 1000:.1f} | "
        f"{statistics.fmean(s) * 1000:.1f} |\n" for what, s in rows)
    print(table)
    if args.opens == STANDARD_OPENS and args.saves == STANDARD_SAVES and not args.no_docs:
        section = (
            "## Studio: item editor\n\n"
            "`bench/studio_editor.py`: in process (the ASGI app, a logged-in admin session), one item of a "
            "model with 30 fields of mixed types (localized texts and rich text in two locales, markdown, "
            "code, numbers, dates, a select, tags, an object, a set, a table, an asset, a link, a repeater, "
            f"variants; the page is {size / 1024:.0f} KB). Server time from the app's call to the end of its "
            "answer, after 5 warm-up requests; each save posts the page's own form with one field changed and "
            "the revision it started from. Targets (issue 15): p50 ≤ 30 ms for both. Load average when the run "
            f"began: {load:.1f} on {os.cpu_count()} cores (other processes share the machine).\n\n" + table
        )
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, "Studio: item editor")
        print(f"wrote the Studio: item editor section of {DEFAULT_DOCS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
