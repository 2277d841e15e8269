#!/usr/bin/env python3
"""Load benchmark of Quire's pages API (`make bench`, after the content and
asset ones).

Builds a site in three locales straight through the Python API: 5,000
published posts, a home page, 20 sections with 10 children and 5
grandchildren each (1,222 pages with the blog), a collection page `/blog`
bound to the posts, a `main` menu and the settings. The pages are created
one by one through `quire.pages.save`, as the API would, and that creation
is timed. It then serves the site with `quire serve --workers 2`, drives the
read endpoints with wrk, fetches `sitemap.xml` a few times and times
sequential slug renames over HTTP. Results go to stdout and, for a
standard-size run, to the "Pages" section of docs/benchmarks.md.

The data is built once in bench/.work/pages (a marker file lets later runs
with the same sizes reuse it; --fresh rebuilds it), and the creation figure
reported is the one measured then. Each run makes a new admin key and a new
key of the public role, which may read pages and posts.

    .venv/bin/python bench/pages.py              # the standard run, about 2 minutes
    .venv/bin/python bench/pages.py --fresh      # rebuild the data (and time the creation) first
    .venv/bin/python bench/pages.py --posts 500 --sections 4 --duration 2 --warmup 1   # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import http.client
import json
import random
import re
import shutil
import signal
import statistics
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import (  # noqa: E402  (a sibling script, not a package)
    DEFAULT_DOCS,
    ROOT,
    Outcome,
    Scenario,
    Server,
    _git_revision,
    _ms,
    _open_quire,
    _terminate,
    add_load_options,
    check_load_options,
    free_port,
    http_get,
    machine_paragraph,
    render_details,
    run_scenario,
    server_log_problems,
    update_doc,
    wrk_missing,
)

BENCH = Path(__file__).resolve().parent
DEFAULT_WORK = BENCH / ".work" / "pages"
SECTION_TITLE = "Pages"

GENERATOR_VERSION = 1  # bump when the generated data changes shape
SEED = 20260202
STANDARD = {"posts": 5_000, "sections": 20, "children": 10, "grandchildren": 5}
BATCH = 5_000
LOCALES = [{"i18n": "de", "name": "Deutsch"}, {"i18n": "fr", "name": "Français"}]
CODES = ("de", "fr")
BENCH_KEY = "bench pages"  # the admin key of the write scenario
SITE_KEY = "bench pages site"  # a public-role key: what a website's server would send
ADMIN_NAME = "bench"
RENAME_SUFFIX = "-renamed"

# -- the data -----------------------------------------------------------------

POSTS_MODEL: dict[str, Any] = {
    "name": "posts", "label": "Posts", "type": "collection",
    "fields": [
        {"name": "title", "type": "text", "required": True, "i18n": True},
        {"name": "slug", "type": "text", "required": True, "i18n": True},
        {"name": "body", "type": "markdown"},
    ],
    # `/blog/<slug>` looks an item up by its slug (`slug_de` first with locale=de).
    "indexes": ["slug", "slug:de", "slug:fr"],
}

# (English, German, French) words for titles; accents and umlauts on purpose:
# slugs are made from the titles as the API makes them.
WORDS: tuple[tuple[str, str, str], ...] = (
    ("News", "Neuigkeiten", "Actualités"), ("Products", "Produkte", "Produits"),
    ("Services", "Leistungen", "Prestations"), ("About us", "Über uns", "À propos"),
    ("Support", "Hilfe", "Assistance"), ("Company", "Unternehmen", "Entreprise"),
    ("Careers", "Karriere", "Carrières"), ("Events", "Veranstaltungen", "Événements"),
    ("Press", "Presse", "Presse"), ("Partners", "Partner", "Partenaires"),
    ("Solutions", "Lösungen", "Solutions"), ("Pricing", "Preise", "Tarifs"),
    ("Resources", "Ressourcen", "Ressources"), ("Community", "Gemeinschaft", "Communauté"),
    ("Documentation", "Dokumentation", "Documentation"), ("Customers", "Kunden", "Clients"),
    ("Industries", "Branchen", "Secteurs"), ("Security", "Sicherheit", "Sécurité"),
    ("Training", "Schulungen", "Formations"), ("Downloads", "Herunterladen", "Téléchargements"),
    ("Guides", "Anleitungen", "Guides"), ("Contact", "Kontakt", "Contact"),
    ("Locations", "Standorte", "Sites"), ("Research", "Forschung", "Recherche"),
    ("Sustainability", "Nachhaltigkeit", "Durabilité"), ("Investors", "Investoren", "Investisseurs"),
    ("Team", "Team", "Équipe"), ("History", "Geschichte", "Histoire"),
    ("Quality", "Qualität", "Qualité"), ("Design", "Gestaltung", "Conception"),
)
AND = ("and", "und", "et")
TEXT = (
    "quire", "content", "page", "route", "menu", "locale", "layout", "section", "site", "news",
    "guide", "release", "team", "product", "service", "customer", "support", "price", "event",
    "partner", "search", "editor", "draft", "publish", "image", "link", "market", "city", "plan",
)
COMPONENTS = ("text", "image", "cta", "quote", "columns", "faq")


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choices(TEXT, k=rng.randint(lo, hi))).capitalize() + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng, 6, 14) for _ in range(rng.randint(2, 4)))


def _component(rng: random.Random, kind: str) -> dict[str, Any]:
    if kind == "text":
        data: dict[str, Any] = {"text": "\n\n".join(_paragraph(rng) for _ in range(rng.randint(1, 2)))}
    elif kind == "image":
        data = {"src": f"/media/{rng.randint(1, 999)}.jpg", "alt": _sentence(rng, 3, 6), "width": 1200}
    elif kind == "cta":
        data = {"label": _sentence(rng, 2, 3), "url": "/blog", "style": rng.choice(("primary", "ghost"))}
    elif kind == "quote":
        data = {"text": _sentence(rng, 8, 16), "author": _sentence(rng, 2, 2)[:-1]}
    elif kind == "faq":
        data = {"items": [{"q": _sentence(rng, 4, 8)[:-1] + "?", "a": _paragraph(rng)}
                          for _ in range(rng.randint(2, 4))]}
    else:
        return {"component": "columns", "label": "Columns", "data": {"gap": "m"},
                "children": [_component(rng, "text") for _ in range(2)]}
    return {"component": kind, "label": kind.capitalize(), "data": data}


def _layout(rng: random.Random, title: str) -> list[dict[str, Any]]:
    """3 to 5 components: a hero, then some text and the like."""
    hero = {"component": "hero", "label": "Hero", "data": {"heading": title, "text": _sentence(rng, 6, 12)}}
    return [hero, *(_component(rng, rng.choice(COMPONENTS)) for _ in range(rng.randint(2, 4)))]


def _titles(rng: random.Random, suffix: int | None) -> dict[str, str]:
    """title, title_de, title_fr and the slugs made from them, for a page
    named by two words (`Pricing and Support 3`); `suffix` keeps siblings apart."""
    from quire.pages.routing import slugify

    a, b = rng.sample(WORDS, 2)
    out: dict[str, str] = {}
    for n, key in enumerate(("", "_de", "_fr")):
        title = f"{a[n]} {AND[n]} {b[n]}" + (f" {suffix}" if suffix else "")
        out[f"title{key}"] = title
        out[f"slug{key}"] = slugify(title)
    return out


def _section_titles(n: int) -> dict[str, str]:
    from quire.pages.routing import slugify

    words = WORDS[n % len(WORDS)]
    extra = f" {n // len(WORDS) + 1}" if n >= len(WORDS) else ""
    out: dict[str, str] = {}
    for i, key in enumerate(("", "_de", "_fr")):
        out[f"title{key}"] = words[i] + extra
        out[f"slug{key}"] = slugify(words[i] + extra)
    return out


def _post(rng: random.Random, n: int, post_id: str, actor: str, now: int) -> dict[str, Any]:
    from quire.pages.routing import slugify

    words = rng.sample(WORDS, 3)
    doc: dict[str, Any] = {"_id": post_id}
    for i, key in enumerate(("", "_de", "_fr")):
        title = " ".join(w[i] for w in words)
        doc[f"title{key}"] = title
        doc[f"slug{key}"] = f"{slugify(title)}-{n}"
    created = now - rng.randint(0, 3 * 365 * 86_400)
    doc.update({
        "body": f"# {doc['title']}\n\n" + "\n\n".join(_paragraph(rng) for _ in range(rng.randint(2, 4))),
        "_state": 1, "_created": created, "_modified": created + rng.randint(0, 86_400),
        "_cby": actor, "_mby": actor,
    })
    return doc


@dataclass
class Dataset:
    data_dir: Path
    marker: dict[str, Any]

    def file(self, name: str) -> Path:
        return self.data_dir.parent / name


def ensure_data(work: Path, sizes: dict[str, int], fresh: bool) -> Dataset:
    """The data dir for these sizes: reused when its marker matches."""
    data_dir = work / "data"
    marker_file = work / "marker.json"
    wanted = {"generator": GENERATOR_VERSION, "seed": SEED, **sizes}
    if not fresh and marker_file.exists() and (data_dir / "quire.db").exists():
        with contextlib.suppress(ValueError, OSError):
            marker = json.loads(marker_file.read_text())
            if all(marker.get(k) == v for k, v in wanted.items()):
                print(f"Reusing {data_dir} ({marker['pages']:,} pages, {sizes['posts']:,} posts; "
                      "--fresh regenerates)")
                return Dataset(data_dir, marker)
    marker_file.unlink(missing_ok=True)
    if data_dir.exists():
        shutil.rmtree(data_dir)
    work.mkdir(parents=True, exist_ok=True)
    marker = {**wanted, **generate(data_dir, sizes)}
    marker_file.write_text(json.dumps(marker, indent=2) + "\n")
    return Dataset(data_dir, marker)


def generate(data_dir: Path, sizes: dict[str, int]) -> dict[str, Any]:
    from quire.auth.service import Identity
    from quire.content.models import parse_model
    from quire.ids import new_id

    print(f"Generating {sizes['posts']:,} posts and "
          f"{1 + sizes['sections'] * (1 + sizes['children'] * (1 + sizes['grandchildren'])) + 1:,} pages "
          f"in {data_dir} ...", flush=True)
    rng = random.Random(SEED)
    admin = Identity("admin", key_id=ADMIN_NAME)
    quire = _open_quire(data_dir)
    try:
        started = time.perf_counter()
        quire.locales.save(LOCALES)
        quire.models.save(parse_model("posts", POSTS_MODEL))
        quire.auth.save_role("public", {"permissions": {"pages/read": True, "content/posts/read": True}})
        now = int(time.time())
        posts = quire.store.collection("content/posts")
        post_ids = [new_id() for _ in range(sizes["posts"])]
        slugs = []
        for start in range(0, len(post_ids), BATCH):
            with quire.store.transaction():
                for n in range(start, min(start + BATCH, len(post_ids))):
                    doc = _post(rng, n, post_ids[n], ADMIN_NAME, now)
                    slugs.append(doc["slug"])
                    posts.insert(doc)
        print(f"  {len(post_ids):,} posts ({time.perf_counter() - started:.1f} s)", flush=True)
        built = asyncio.run(_site(quire, rng, sizes, admin))
    finally:
        quire.close()
    files = {
        "routes-default.txt": [p["_r"] for p in built["leaves"]],
        "routes-de.txt": [p.get("_r_de", p["_r"]) for p in built["leaves"]],
        "blog-routes.txt": [f"{built['blog']['_r']}/{s}" for s in slugs],
        "post-ids.txt": post_ids,
    }
    for name, lines in files.items():
        (data_dir.parent / name).write_text("\n".join(lines) + "\n")
    section = built["sections"][0]
    leaf = built["leaves"][0]
    return {
        "pages": built["count"],
        "published_pages": built["count"],
        "create_seconds": round(built["seconds"], 2),
        "pages_per_second": round(built["count"] / built["seconds"], 1),
        "first_100_ms": round(built["first_100_ms"], 2),
        "last_100_ms": round(built["last_100_ms"], 2),
        "avg_page_bytes": round(built["page_bytes"] / built["count"]),
        "section": {"_id": section["_id"], "slug": section["slug"], "_r_de": section.get("_r_de", section["_r"]),
                    "subtree": built["subtree"]},
        "sample": {"route": leaf["_r"], "route_de": leaf.get("_r_de", leaf["_r"]), "title_de": leaf["title_de"],
                   "post_id": post_ids[len(post_ids) // 2], "post_slug": slugs[len(slugs) // 2]},
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


async def _site(quire: Any, rng: random.Random, sizes: dict[str, int], admin: Any) -> dict[str, Any]:
    """The pages, one `save` each (timed), then the menu and the settings."""
    save = quire.pages.save
    timings: list[float] = []
    page_bytes = 0

    async def page(data: dict[str, Any]) -> dict[str, Any]:
        nonlocal page_bytes
        t = time.perf_counter()
        doc: dict[str, Any] = await save(data, admin)
        timings.append(time.perf_counter() - t)
        page_bytes += len(orjson.dumps(doc))
        if len(timings) % 200 == 0:
            print(f"  {len(timings):,} pages ({sum(timings):.1f} s, last one {timings[-1] * 1000:.1f} ms)",
                  flush=True)
        return doc

    started = time.perf_counter()
    await page({"title": "Home", "title_de": "Startseite", "title_fr": "Accueil", "slug": "",
                "layout": _layout(rng, "Home"), "seo": {"title": "Quire bench site"},
                "seo_de": {"title": "Quire-Testseite"}, "seo_fr": {"title": "Site de test Quire"}})
    blog = await page({"title": "Blog", "title_fr": "Le blog", "slug": "blog", "slug_fr": "le-blog",
                       "type": "collection", "data": {"model": "posts", "slugField": "slug"}})
    sections: list[dict[str, Any]] = []
    leaves: list[dict[str, Any]] = []
    links = []
    for s in range(sizes["sections"]):
        names = _section_titles(s)
        section = await page({**names, "layout": _layout(rng, names["title"]),
                              "seo": {"description": _sentence(rng, 8, 14)}})
        sections.append(section)
        child_links = []
        for c in range(sizes["children"]):
            names = _titles(rng, c + 1)
            child = await page({**names, "_pid": section["_id"], "layout": _layout(rng, names["title"]),
                                "seo": {"description": _sentence(rng, 8, 14)}})
            child_links.append({"url": f"pages://{child['_id']}"})
            for g in range(sizes["grandchildren"]):
                names = _titles(rng, g + 1)
                leaves.append(await page({**names, "_pid": child["_id"], "layout": _layout(rng, names["title"]),
                                          "seo": {"description": _sentence(rng, 8, 14)}}))
        links.append({"url": f"pages://{section['_id']}", "children": child_links})
    seconds = time.perf_counter() - started
    await quire.menus.save({"name": "main", "label": "Main", "links": links}, admin)
    await quire.menus.save_settings({
        "seo": {"title": "Quire bench site", "description": "A site of 1,200 pages in three locales"},
        "seo_de": {"description": "Eine Seite mit 1.200 Seiten in drei Sprachen"},
        "seo_fr": {"description": "Un site de 1 200 pages en trois langues"},
        "meta": {"siteName": "Quire bench"}, "scripts": {"header": "", "footer": ""},
    }, admin)
    count = len(timings)
    print(f"  {count:,} pages in {seconds:.1f} s: {count / seconds:,.0f} pages/s "
          f"(first 100: {statistics.mean(timings[:100]) * 1000:.1f} ms each, "
          f"last 100: {statistics.mean(timings[-100:]) * 1000:.1f} ms each)", flush=True)
    return {"count": count, "seconds": seconds, "sections": sections, "leaves": leaves, "blog": blog,
            "first_100_ms": statistics.mean(timings[:100]) * 1000,
            "last_100_ms": statistics.mean(timings[-100:]) * 1000, "page_bytes": page_bytes,
            "subtree": sizes["children"] * (1 + sizes["grandchildren"])}


def prepare_run(dataset: Dataset) -> tuple[str, str]:
    """Put the renamed section back if an interrupted run left it renamed,
    and make this run's keys: (admin key, public-role key)."""
    from quire.auth.service import Identity

    section = dataset.marker["section"]
    quire = _open_quire(dataset.data_dir)
    try:
        stored = quire.store.collection("pages/pages").get(section["_id"])
        if stored is not None and stored.get("slug") != section["slug"]:
            print(f"Restoring the slug of section {section['_id']} (left renamed by an earlier run)")
            asyncio.run(quire.pages.save({"_id": section["_id"], "slug": section["slug"]},
                                         Identity("admin", key_id=ADMIN_NAME)))
        for key in quire.auth.list_keys():
            if key["name"] in (BENCH_KEY, SITE_KEY):
                quire.auth.delete_key(key["_id"])
        admin = str(quire.auth.create_key(BENCH_KEY, "admin")["key"])
        site = str(quire.auth.create_key(SITE_KEY, "public")["key"])
        return admin, site
    finally:
        quire.close()


# -- scenarios ----------------------------------------------------------------


def scenarios(dataset: Dataset) -> list[Scenario]:
    m = dataset.marker
    sample, section = m["sample"], m["section"]
    pages = m["published_pages"]

    def check_page(route: str, title: str | None = None) -> Any:
        def check(body: Any) -> str | None:
            if not isinstance(body, dict) or body.get("_r") != route:
                return f"expected the page at {route}, got {str(body)[:200]}"
            if title is not None and body.get("title") != title:
                return f"expected the title {title!r}, got {body.get('title')!r}"
            # Without `locale` a page answers as stored (title_de, ...); with one, no *_<code> key is left.
            if title is not None and any(k.startswith(("title_", "slug_", "_r_")) for k in body):
                return "the answer holds other locales' keys"
            return None if len(body.get("layout") or []) >= 3 else "the page has no layout"
        return check

    def check_item(body: Any) -> str | None:
        item = ((body or {}).get("data") or {}).get("item") if isinstance(body, dict) else None
        if not isinstance(body, dict) or body.get("type") != "collection" or not isinstance(item, dict):
            return f"expected the blog page with an item, got {str(body)[:200]}"
        return None if item.get("slug") == sample["post_slug"] else f"wrong item: {item.get('slug')}"

    def check_menu(body: Any) -> str | None:
        links = body.get("links") if isinstance(body, dict) else None
        if not isinstance(links, list) or len(links) != m["sections"]:
            return f"expected {m['sections']} links, got {str(body)[:200]}"
        if any(len(link.get("children") or []) != m["children"] for link in links):
            return f"a link does not have {m['children']} children"
        first = links[0]
        return None if first.get("route") == section["_r_de"] else f"first route is {first.get('route')}"

    def check_routes(body: Any) -> str | None:
        if not isinstance(body, dict) or list(body) != ["de"]:
            return f"expected {{de: [...]}}, got {str(body)[:200]}"
        routes = {r.get("route") for r in body["de"]}
        if len(body["de"]) != pages or len(routes) != pages:
            return f"expected {pages:,} distinct routes, got {len(body['de']):,} ({len(routes):,} distinct)"
        return None if sample["route_de"] in routes else f"{sample['route_de']} is missing"

    def check_reference(body: Any) -> str | None:
        ok = isinstance(body, dict) and body.get("_id") == sample["post_id"]
        return None if ok else "item by id did not answer that item"

    by_route = "/api/pages/page?route="
    by_route_de = "/api/pages/page?locale=de&route="
    return [
        Scenario("page by route, three levels (default locale)", by_route + sample["route"],
                 check_page(sample["route"]), BENCH / "ids.lua", [by_route, str(dataset.file("routes-default.txt"))]),
        Scenario("page by route, three levels, `locale=de` (German routes)", by_route_de + sample["route_de"],
                 check_page(sample["route_de"], sample["title_de"]), BENCH / "ids.lua",
                 [by_route_de, str(dataset.file("routes-de.txt"))]),
        Scenario(f"collection item through the page (`/blog/<slug>`, {m['posts']:,} posts)",
                 f"{by_route}/blog/{sample['post_slug']}", check_item, BENCH / "ids.lua",
                 [by_route, str(dataset.file("blog-routes.txt"))]),
        Scenario(f"menu `main`, `locale=de` ({m['sections']} links, {m['sections'] * m['children']} children)",
                 "/api/pages/menu/main?locale=de", check_menu),
        Scenario(f"all routes, `locale=de` ({pages:,} pages)", "/api/pages/routes?locale=de", check_routes),
        Scenario("reference: content item by id (same server, same posts)",
                 f"/api/content/item/posts/{sample['post_id']}", check_reference, BENCH / "ids.lua",
                 ["/api/content/item/posts/", str(dataset.file("post-ids.txt"))]),
    ]


@dataclass
class Timed:
    """Requests timed at the client, one at a time."""

    name: str
    timings_ms: list[float]
    size: int = 0
    error: str | None = None

    @property
    def p50(self) -> float:
        return statistics.median(self.timings_ms)

    @property
    def p99(self) -> float:
        if len(self.timings_ms) < 100:
            return max(self.timings_ms)
        return statistics.quantiles(self.timings_ms, n=100, method="inclusive")[98]


def run_sitemap(base: str, dataset: Dataset, rounds: int, n: int) -> Timed:
    m = dataset.marker
    # Every page (no links here) and every post, in three locales, each a URL of its own.
    expected = 3 * (m["published_pages"] + m["posts"])
    name = f"`sitemap.xml` ({expected:,} URLs, no key), {rounds} sequential requests"
    print(f"\n[{n}] {name}", flush=True)
    timings = []
    size = 0
    for i in range(rounds + 1):
        started = time.perf_counter()
        status, body = http_get(base + "/api/pages/sitemap.xml", None, timeout=120)
        elapsed = (time.perf_counter() - started) * 1000
        if status != 200:
            return Timed(name, [0.0], error=f"answered {status}: {body[:200]!r}")
        if i == 0:  # the first one checks the answer and warms up
            urls = body.count(b"<url>")
            if urls != expected:
                return Timed(name, [0.0], error=f"expected {expected:,} <url> entries, got {urls:,}")
            size = len(body)
            continue
        timings.append(elapsed)
    result = Timed(name, timings, size)
    print(f"    p50 {result.p50:.1f} ms, max {max(timings):.1f} ms, {size / 1e6:.2f} MB", flush=True)
    return result


def run_renames(base: str, key: str, dataset: Dataset, rounds: int, n: int) -> Timed:
    """Rename a section's slug back and forth over HTTP, one request at a
    time, and time each answer; the section ends with its own slug."""
    section = dataset.marker["section"]
    moved = section["subtree"]
    name = (f"rename a section's slug (`POST /api/pages/page`, moves {moved} descendants' routes), "
            f"{rounds} sequential requests")
    print(f"\n[{n}] {name}", flush=True)
    parsed = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port, timeout=60)
    headers = {"api-key": key, "Content-Type": "application/json"}
    timings: list[float] = []
    error: str | None = None
    size = 0
    original = section["slug"]
    try:
        for i in range(rounds + 2):  # two warm-up writes, then `rounds`; an even total ends on the original
            slug = original + RENAME_SUFFIX if i % 2 == 0 else original
            body = orjson.dumps({"data": {"_id": section["_id"], "slug": slug}})
            started = time.perf_counter()
            conn.request("POST", "/api/pages/page", body=body, headers=headers)
            response = conn.getresponse()
            answer = response.read()
            elapsed = (time.perf_counter() - started) * 1000
            if response.status != 200:
                error = f"answered {response.status}: {answer[:200]!r}"
                break
            if orjson.loads(answer).get("_r") != "/" + slug:
                error = f"the route did not follow the slug: {answer[:200]!r}"
                break
            size = len(answer)
            if i >= 2:
                timings.append(elapsed)
    finally:  # put the original slug back whatever happened (a no-op for the routes when it is back)
        with contextlib.suppress(OSError, http.client.HTTPException):
                conn.request("POST", "/api/pages/page", headers=headers,
                             body=orjson.dumps({"data": {"_id": section["_id"], "slug": original}}))
                conn.getresponse().read()
        conn.close()
    if error is None:
        status, _ = http_get(base + "/api/pages/page?route=" + dataset.marker["sample"]["route"], key)
        if status != 200:
            error = f"after the renames the sample route answers {status}"
    result = Timed(name, timings or [0.0], size, error)
    if error:
        print(f"    ERROR: {error}", flush=True)
    else:
        print(f"    p50 {result.p50:.1f} ms, p99 {result.p99:.1f} ms, max {max(timings):.1f} ms", flush=True)
    return result


# -- report -------------------------------------------------------------------


def _size(count: float) -> str:
    if count >= 1e6:
        return f"{count / 1e6:.2f} MB"
    return f"{count / 1e3:.1f} KB" if count >= 1e3 else f"{count:.0f} B"


def render_table(outcomes: list[Outcome], sizes: dict[str, int], timed: list[Timed]) -> str:
    lines = ["| scenario | req/s | p50 | p99 | answer |", "|---|---:|---:|---:|---:|"]
    for o in outcomes:
        if o.result is None:
            lines.append(f"| {o.scenario.name} | — | — | — | **error**: {o.error} |")
            continue
        r = o.result
        note = f" (**{r.non2xx:,} non-2xx**)" if r.non2xx else ""
        if r.socket_errors.get("timeout"):
            note += (f" (**{r.socket_errors['timeout']:,} timeouts**: wrk stops waiting after 2 s, "
                     "so p99 is at most 2 s and counts answered requests only)")
        lines.append(f"| {o.scenario.name} | {r.rps:,.0f} | {_ms(r.p50)} | {_ms(r.p99)} | "
                     f"{_size(sizes.get(o.scenario.name, 0))}{note} |")
    for t in timed:
        if t.error:
            lines.append(f"| {t.name} | — | — | — | **error**: {t.error} |")
            continue
        p99 = f"{_ms(t.p99)}" + (" (max)" if len(t.timings_ms) < 100 else "")
        rate = len(t.timings_ms) * 1000 / sum(t.timings_ms)
        lines.append(f"| {t.name} | {rate:,.1f} (one at a time) | {_ms(t.p50)} | {p99} | {_size(t.size)} |")
    return "\n".join(lines)


def content_figures(docs: Path) -> dict[str, float]:
    """req/s of the Content section's scenarios already in the docs, by
    the start of their name ('item by id', 'items page')."""
    try:
        text = docs.read_text()
    except OSError:
        return {}
    section = re.search(r"^## Content\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    out: dict[str, float] = {}
    for name, rps in re.findall(r"^\| ([a-z ]+?) \(.*?\| ([\d,]+) \|", section.group(1) if section else "", re.M):
        out.setdefault(name, float(rps.replace(",", "")))
    return out


def comparison(outcomes: list[Outcome], figures: dict[str, float]) -> str:
    """Sentences comparing the first scenario (a page by route) with the
    reference row of this run and the Content section's figures, and
    naming the scenarios under 1,000 req/s."""
    reference = [o for o in outcomes if o.scenario.name.startswith("reference")]
    if not outcomes or outcomes[0].result is None or not reference or reference[0].result is None:
        return ""
    page, item = outcomes[0].result.rps, reference[0].result.rps
    text = (f"In this run a page by route answered {page:,.0f} req/s, {page / item:.0%} of the {item:,.0f} req/s "
            "of a content item by id on the same server (the reference row)")
    if "item by id" in figures:
        text += (f"; the Content section measured {figures['item by id']:,.0f} req/s for item by id and "
                 f"{figures.get('items page', 0):,.0f} for a page of 20 items, on 100,000 posts and at another "
                 "time (see \"Reading these numbers\")")
    slow = [f"{o.scenario.name.split(' (')[0]} ({o.result.rps:,.0f})" for o in outcomes
            if o.result is not None and o.result.rps < 1000]
    if slow:
        text += ". Under 1,000 req/s: " + "; ".join(slow)
    return text + "."


def pages_section(args: argparse.Namespace, dataset: Dataset, table: str, details: str, compare: str) -> str:
    m = dataset.marker
    generated = m.get("generated", "?")[:16].replace("T", " ")
    return (
        f"## {SECTION_TITLE}\n\n"
        f"`make bench` (bench/pages.py) at {_git_revision()}: a site in three locales (default, `de`, `fr`) "
        f"of {m['pages']:,} published pages (~{m['avg_page_bytes']:,} bytes of JSON each: a home page, "
        f"{m['sections']} sections with {m['children']} children and {m['grandchildren']} grandchildren each, "
        f"layouts of 3–5 components, localized titles and slugs) and a collection page `/blog` bound to "
        f"{m['posts']:,} published posts (slug indexed per locale); a `main` menu of {m['sections']} sections "
        f"with {m['children']} children each. `quire serve --workers {args.workers}`, driven by "
        f"`wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s` on the same machine after a "
        f"{args.warmup:g} s warm-up per scenario; reads carry a key of the public role (`pages/read`, "
        "`content/posts/read`), the sitemap is fetched without a key and the renames carry an admin key. "
        "The last two rows are timed at the client, one request at a time (req/s there is requests over "
        "their total time); with fewer than 100 requests p99 is the maximum.\n\n"
        f"{table}\n\n{details}\n\n"
        f"**Creating the pages** one by one through `quire.pages.save` (each save reads every page to check "
        f"the routes): {m['pages']:,} pages in {m['create_seconds']:.1f} s, **{m['pages_per_second']:,.0f} "
        f"pages/s** on average; the first 100 took {m['first_100_ms']:.1f} ms each, the last 100 "
        f"{m['last_100_ms']:.1f} ms each (measured when the data was generated, {generated} UTC).\n\n"
        + (f"{compare}\n" if compare else "")
    )


# -- main ---------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Load benchmark of the pages API (see bench/README.md).")
    parser.add_argument("--posts", type=int, default=STANDARD["posts"], help="posts behind /blog (default 5000)")
    parser.add_argument("--sections", type=int, default=STANDARD["sections"], help="top-level sections (default 20)")
    parser.add_argument("--children", type=int, default=STANDARD["children"], help="children per section (default 10)")
    parser.add_argument("--grandchildren", type=int, default=STANDARD["grandchildren"],
                        help="grandchildren per child (default 5)")
    add_load_options(parser, DEFAULT_WORK, SECTION_TITLE, connections=50)
    parser.add_argument("--renames", type=int, default=200, help="timed slug renames (default 200)")
    parser.add_argument("--sitemaps", type=int, default=10, help="timed sitemap.xml requests (default 10)")
    args = parser.parse_args(argv)
    if min(args.posts, args.sections, args.children, args.grandchildren, args.renames, args.sitemaps) < 1:
        parser.error("--posts, --sections, --children, --grandchildren, --renames and --sitemaps must be at least 1")
    check_load_options(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    if wrk_missing():
        return 2
    work: Path = args.work.resolve()
    sizes = {k: getattr(args, k) for k in STANDARD}
    outcomes: list[Outcome] = []
    timed: list[Timed] = []
    answer_sizes: dict[str, int] = {}
    try:
        dataset = ensure_data(work, sizes, args.fresh)
        admin_key, site_key = prepare_run(dataset)
        server = Server(dataset.data_dir, free_port(), args.workers, work / "server.log")
        try:
            server.start()
            pids = server.wait_ready()
            print(f"Serving on {server.base}: worker pids {pids}", flush=True)
            plan = scenarios(dataset)
            for n, sc in enumerate(plan, 1):
                status, body = http_get(server.base + sc.path, site_key)
                answer_sizes[sc.name] = len(body) if status == 200 else 0
                outcomes.append(run_scenario(args, work, server.base, site_key, sc, n))
                if outcomes[-1].error:
                    print(f"    ERROR: {outcomes[-1].error}", flush=True)
            timed.append(run_sitemap(server.base, dataset, args.sitemaps, len(plan) + 1))
            timed.append(run_renames(server.base, admin_key, dataset, args.renames, len(plan) + 2))
        finally:
            server.stop()
    except KeyboardInterrupt:
        print("\nInterrupted; the server was stopped.", file=sys.stderr)
        return 130

    problems = server_log_problems(work / "server.log")
    table = render_table(outcomes, answer_sizes, timed)
    details = render_details(outcomes, None)
    standard = sizes == STANDARD
    docs: Path | None = None if args.no_docs else args.docs or (DEFAULT_DOCS if standard else None)
    compare = comparison(outcomes, content_figures(docs or DEFAULT_DOCS))
    m = dataset.marker
    print("\n" + table + "\n\n" + details)
    print(f"\nCreating {m['pages']:,} pages through quire.pages.save: {m['create_seconds']:.1f} s, "
          f"{m['pages_per_second']:,.0f} pages/s (first 100: {m['first_100_ms']:.1f} ms each, "
          f"last 100: {m['last_100_ms']:.1f} ms each; measured at {m.get('generated')})")
    if compare:
        print(compare)
    if problems:
        print(f"\nThe server logged {len(problems)} problem line(s) (see {work / 'server.log'}):")
        print("\n".join(problems[:10]))
    if docs is not None:
        update_doc(docs, machine_paragraph(), pages_section(args, dataset, table, details, compare), SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {docs}")
    elif not args.no_docs:
        print(f"\nNot a standard-size run: {DEFAULT_DOCS.relative_to(ROOT)} left as it is (--docs PATH writes one).")
    failed = any(o.error or (o.result is not None and o.result.non2xx) for o in outcomes)
    return 1 if failed or any(t.error for t in timed) else 0


if __name__ == "__main__":
    sys.exit(main())
