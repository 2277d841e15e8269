"""The demo project of `make run`: a small blog in two locales."""

from __future__ import annotations

import dataclasses
import io
import secrets
from typing import TYPE_CHECKING, Any

from PIL import Image, ImageDraw

from quire.assets.service import Upload
from quire.auth.service import Identity
from quire.content.models import parse_model

if TYPE_CHECKING:
    from quire.modules import Services

DEMO_KEY_NAME = "demo admin"
ADMIN = Identity("admin", key_id="demo", kind="system")

MODELS: list[dict[str, Any]] = [
    {
        "name": "authors", "label": "Authors", "type": "collection",
        "fields": [
            {"name": "name", "type": "text", "required": True},
            {"name": "bio", "type": "longtext", "i18n": True},
            {"name": "email", "type": "text"},
        ],
        "indexes": ["name"],
    },
    {
        "name": "posts", "label": "Posts", "type": "collection",
        "fields": [
            {"name": "title", "type": "text", "required": True, "i18n": True},
            {"name": "slug", "type": "text", "required": True},
            {"name": "body", "type": "markdown", "i18n": True},
            {"name": "tags", "type": "tags"},
            {"name": "category", "type": "select", "opts": {"options": ["news", "guides", "releases"]}},
            {"name": "published", "type": "date"},
            {"name": "featured", "type": "boolean", "default": False},
            {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
            {"name": "image", "type": "asset"},
            {"name": "hero", "type": "variants"},
        ],
        "indexes": ["slug", ["category", "published"], "published"],
    },
    {
        "name": "settings", "label": "Site settings", "type": "singleton",
        "fields": [
            {"name": "siteName", "type": "text", "i18n": True},
            {"name": "tagline", "type": "text", "i18n": True},
            {"name": "postsPerPage", "type": "number", "default": 10},
        ],
    },
    {
        "name": "nav", "label": "Navigation", "type": "tree",
        "fields": [
            {"name": "label", "type": "text", "required": True, "i18n": True},
            {"name": "url", "type": "text"},
        ],
    },
]


PICTURES = [
    ("harbour-at-dawn", ((255, 183, 94), (237, 117, 57), (41, 50, 84))),
    ("forest-path", ((168, 213, 117), (67, 130, 70), (22, 52, 36))),
    ("city-at-night", ((35, 42, 89), (98, 67, 140), (248, 200, 92))),
    ("winter-lake", ((225, 238, 245), (130, 176, 210), (52, 84, 120))),
]


def _picture(colors: tuple[tuple[int, int, int], ...], size: tuple[int, int] = (1600, 1000)) -> bytes:
    """A landscape-like JPEG: a sky gradient, a sun and two hills."""
    sky, mid, ground = colors
    width, height = size
    image = Image.new("RGB", size)
    draw = ImageDraw.Draw(image)
    for y in range(height):
        t = y / height
        row = tuple(round(a + (b - a) * t) for a, b in zip(sky, mid, strict=True))
        draw.line([(0, y), (width, y)], fill=row)
    draw.ellipse([width * 0.62, height * 0.18, width * 0.78, height * 0.44], fill=(255, 244, 214))
    draw.polygon([(0, height), (0, height * 0.62), (width * 0.45, height * 0.5), (width, height * 0.72), (width, height)],
                 fill=tuple(round(c * 0.8) for c in ground))
    draw.polygon([(0, height), (width * 0.3, height * 0.78), (width, height * 0.82), (width, height)], fill=ground)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return out.getvalue()


def contact_token(quire: Services) -> str | None:
    form = quire.forms.by_name("Contact")
    return form["token"] if form else None


DEMO_USER = "admin"


def rotate_admin_password(quire: Services) -> str:
    """The demo's admin user (created when missing) with a new random
    password, which is returned: printed once, stored as a hash."""
    password = secrets.token_urlsafe(12)
    user = quire.users.by_name(DEMO_USER)
    if user is None:
        quire.users.create({"user": DEMO_USER, "email": "admin@example.com", "name": "Demo Admin",
                            "role": "admin", "password": password})
    else:
        quire.users.update(user["_id"], {"password": password, "active": True, "role": "admin"})
    return password


async def install_demo(quire: Services) -> tuple[bool, str]:
    """Create the demo content unless models exist; always rotate the demo
    admin key and return it."""
    created = False
    if not quire.models.all():
        await _create(quire)
        created = True
    await _preview_address(quire)
    for key in quire.auth.list_keys():
        if key["name"] == DEMO_KEY_NAME:
            await quire.auth.adelete_key(key["_id"])
    key = (await quire.auth.acreate_key(DEMO_KEY_NAME, "admin"))["key"]
    return created, key


PREVIEW_PAGE = "/demo/preview"  # the example site page of the live preview (content/screens/live.py)


async def _preview_address(quire: Services) -> None:
    """The posts' preview address: the example site page Quire serves, at
    the address this demo is served at (again on every run, as the port may
    change), unless someone set another."""
    posts = quire.models.find("posts")
    if posts is None or any(PREVIEW_PAGE not in p["uri"] for p in posts.preview):
        return
    server = quire.settings.server
    host = "127.0.0.1" if server.host in ("0.0.0.0", "::", "") else server.host
    base = server.public_url.rstrip("/") or f"http://{host}:{server.port}"
    uri = f"{base}{PREVIEW_PAGE}?model={{model}}&id={{id}}&token={{token}}"
    if posts.preview != [{"name": "Demo site", "uri": uri}]:
        await quire.models.asave(dataclasses.replace(posts, preview=[{"name": "Demo site", "uri": uri}]))


async def _create(quire: Services) -> None:
    await quire.locales.asave([{"i18n": "de", "name": "Deutsch"}])
    for definition in MODELS:
        await quire.models.asave(parse_model(definition["name"], definition))
    await quire.auth.asave_role("public", {"permissions": {
        "content/posts/read": True, "content/authors/read": True,
        "content/settings/read": True, "content/nav/read": True, "assets/read": True,
        "pages/read": True, "l10n/read": True, "searchmod/read": True,
    }})
    # what a writer of the blog needs in the studio, without deleting: give
    # it to a user under Users to see the studio as an editor sees it
    await quire.auth.asave_role("editor", {"permissions": {
        **{f"content/{m['name']}/{action}": True for m in MODELS for action in ("read", "create", "update", "publish")},
        "assets/read": True, "assets/upload": True,
    }})
    pictures = await quire.assets.upload(
        [Upload(f"{name}.jpg", _picture(colors)) for name, colors in PICTURES],
        {"tags": ["demo"]}, ADMIN,
    )
    save = quire.content.save
    ada = await save("authors", {"name": "Ada Lovelace", "bio": "Writes about engines.",
                                 "bio_de": "Schreibt über Maschinen."}, ADMIN)
    alan = await save("authors", {"name": "Alan Turing", "bio": "Writes about machines."}, ADMIN)
    posts = [
        ("Hello, Quire", "Hallo, Quire", "hello-quire", "news", "2026-01-05", ada, ["intro"]),
        ("Modelling content", "Inhalte modellieren", "modelling-content", "guides", "2026-02-10", alan, ["models", "howto"]),
        ("Filters and sorting", "Filter und Sortierung", "filters-and-sorting", "guides", "2026-03-15", ada, ["api", "howto"]),
        ("Quire 0.1 released", "Quire 0.1 ist da", "quire-0-1", "releases", "2026-04-20", alan, ["release"]),
    ]
    saved = []
    for (title, title_de, slug, category, day, author, tags), picture in zip(posts, pictures, strict=True):
        saved.append(await save("posts", {
            "title": title, "title_de": title_de, "slug": slug, "category": category,
            "published": day, "tags": tags, "author": {"_model": "authors", "_id": author["_id"]},
            "body": f"# {title}\n\nA demo post.", "body_de": f"# {title_de}\n\nEin Demo-Beitrag.",
            "image": {"_id": picture["_id"]},
        }, ADMIN))
    await save("posts", {"title": "Draft: next steps", "slug": "next-steps", "_state": 0}, ADMIN)
    await save("posts", {"_id": saved[0]["_id"], "hero": {"persona:variants": [
        {"id": "guest", "label": "Guest", "audience": [],
         "data": {"heading": "Hello, {{ name:visitor }}!", "text": "Sign up to get our guides by e-mail."}},
        {"id": "member", "label": "Member", "audience": ["member"],
         "data": {"heading": "Welcome back, {{ name:friend }}!", "text": "New this week: three guides for {{ city:your city }}."}},
        {"id": "weekend", "label": "Member at the weekend", "audience": ["member", "weekend"],
         "data": {"heading": "Happy weekend, {{ name:friend }}!", "text": "Take your time: long reads inside."},
         "meta": {"schedule": {"days": ["sat", "sun"], "timezone": "Europe/Berlin"}}},
    ]}}, ADMIN)
    await save("settings", {"siteName": "Quire Demo", "siteName_de": "Quire-Demo",
                            "tagline": "A headless CMS", "tagline_de": "Ein Headless-CMS"}, ADMIN)
    home = await save("nav", {"label": "Home", "label_de": "Start", "url": "/"}, ADMIN)
    blog = await save("nav", {"label": "Blog", "url": "/blog"}, ADMIN)
    await save("nav", {"label": "Guides", "label_de": "Anleitungen", "url": "/blog/guides", "_pid": blog["_id"]}, ADMIN)
    await save("nav", {"label": "About", "label_de": "Über uns", "url": "/about", "_pid": home["_id"]}, ADMIN)
    await _pages(quire, [ada, alan])
    await _translations(quire)
    await quire.search.put("posts", {"label": "Posts", "model": "posts", "fields": ["title", "body", "tags"],
                                      "locales": ["de"], "weights": {"title": 3, "tags": 2}}, ADMIN)
    await quire.forms.save({
        "name": "Contact", "group": "website", "fields": ["name", "email", "message", "attachment"],
        "honeypot": "website", "emails": [],
    }, ADMIN)


async def _pages(quire: Services, authors: list[dict[str, Any]]) -> None:
    """A home page, a blog bound to posts, an about section two levels deep
    with German routes, a page carrying the settings singleton, the main
    menu and the SEO settings."""
    save = quire.pages.save
    home = await save({"title": "Home", "title_de": "Start", "slug": "", "layout": [
        {"component": "hero", "label": "Welcome", "data": {"heading": "Quire Demo", "text": "A headless CMS"}},
        {"component": "latestPosts", "data": {"limit": 3}},
    ], "seo": {"title": "Quire Demo"}, "seo_de": {"title": "Quire-Demo"}}, ADMIN)
    blog = await save({"title": "Blog", "type": "collection", "data": {"model": "posts", "slugField": "slug"}}, ADMIN)
    about = await save({"title": "About", "title_de": "Über uns", "slug_de": "ueber-uns", "layout": [
        {"component": "text", "data": {"text": "Quire is one process serving content."}},
    ]}, ADMIN)
    team = await save({"title": "Team", "_pid": about["_id"], "layout": [
        {"component": "people", "data": {"authors": [{"_model": "authors", "_id": a["_id"]} for a in authors]}},
    ]}, ADMIN)
    await save({"title": "Imprint", "title_de": "Impressum", "type": "singleton", "data": {"model": "settings"}}, ADMIN)
    await save({"title": "Documentation", "title_de": "Dokumentation", "type": "link",
                "data": {"url": "https://example.com/docs", "target": "_blank"}}, ADMIN)
    await quire.menus.save({"name": "main", "label": "Main menu", "links": [
        {"title": "Home", "title_de": "Start", "url": f"pages://{home['_id']}"},
        {"title": "", "url": f"pages://{blog['_id']}"},
        {"title": "", "url": f"pages://{about['_id']}", "children": [
            {"title": "", "url": f"pages://{team['_id']}"},
        ]},
        {"title": "Documentation", "title_de": "Dokumentation", "url": "https://example.com/docs",
         "target": "_blank"},
        {"title": "Coming soon", "url": "/soon", "active": False},
    ]}, ADMIN)
    await quire.menus.save_settings({
        "seo": {"title": "Quire Demo", "description": "A demo site served by Quire"},
        "seo_de": {"description": "Eine Demo-Seite von Quire"},
        "scripts": {"header": "", "footer": ""},
        "meta": {"siteName": "Quire Demo"},
    }, ADMIN)


TRANSLATIONS = {
    "nav.home": ("Home", "Start", "Accueil"),
    "nav.blog": ("Blog", "Blog", "Blog"),
    "nav.about": ("About", "Über uns", "À propos"),
    "footer.copyright": ("© {{year}} Quire Demo", "© {{year}} Quire-Demo", "© {{year}} Démo Quire"),
    "footer.imprint": ("Imprint", "Impressum", "Mentions légales"),
    "form.email": ("E-mail address", "E-Mail-Adresse", "Adresse e-mail"),
    "form.send": ("Send", None, "Envoyer"),
    "form.thanks": ("Thank you, we will answer soon.", None, "Merci, nous répondrons bientôt."),
}


async def _translations(quire: Services) -> None:
    """A project of website strings in three locales; two German strings
    are left to translate."""
    keys = {key: {loc: text for loc, text in zip(("en", "de", "fr"), texts, strict=True) if text}
            for key, texts in TRANSLATIONS.items()}
    await quire.l10n.put("site", {"label": "Website strings", "locales": ["en", "de", "fr"], "keys": keys}, ADMIN)
