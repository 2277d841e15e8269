#!/usr/bin/env python3
"""Set up a fresh Cockpit CMS 2 instance and record its GraphQL answers as JSON fixtures.

Python 3 standard library only.  Expects a Cockpit server on BASE (default
http://127.0.0.1:8181) whose storage is still empty (not installed yet), as
README.md says: a Cockpit 2 tree served by PHP 8.3 or newer
(`php -S 127.0.0.1:8181 -t <cockpit> <cockpit>/index.php`).

Phases:
  1. setup   - run the installer (/install), log into the admin UI like a browser
               does (session cookie + CSRF token), create a role, two API keys, a
               second locale, the content models, upload a PNG asset, then create
               content items through the REST API (/api/content/item/<model>).
               Tree items get their parent (_pid/_o) through the admin endpoint the
               UI uses (/content/models/saveItem/<model>), because the REST API
               strips _pid/_o.
  2. record  - POST/GET /api/gql with many queries; one fixture file per call.
  3. dump    - 00-data.json with models (as stored), roles, locales, asset and items.

Usage: python3 record.py [--base URL] [--out DIR] [--cockpit DIR]
"""

import argparse
import glob
import http.cookiejar
import json
import os
import re
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zlib

ap = argparse.ArgumentParser()
ap.add_argument("--base", default="http://127.0.0.1:8181")
ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
ap.add_argument("--cockpit", required=True, help="the Cockpit tree being served (its storage/ is read)")
ap.add_argument("--state", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "cockpit-record-state.json"))
ARGS = ap.parse_args()

BASE = ARGS.base.rstrip("/")
OUT = ARGS.out
os.makedirs(OUT, exist_ok=True)

# ---------------------------------------------------------------- HTTP helpers

COOKIES = http.cookiejar.CookieJar()
# no automatic redirects: we want to see real statuses
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None

ADMIN_OPENER = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(COOKIES), NoRedirect)
API_OPENER = urllib.request.build_opener(NoRedirect)  # API calls: no cookies at all


def http(method, path, body=None, headers=None, opener=API_OPENER, raw=None):
    """Returns (status, headers(dict, lower-cased), text)."""
    url = BASE + path
    data = None
    hdrs = dict(headers or {})
    if raw is not None:
        data = raw if isinstance(raw, bytes) else raw.encode()
    elif body is not None:
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with opener.open(req, timeout=60) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read().decode("utf-8", "replace")


def parse(text):
    try:
        return json.loads(text)
    except Exception:
        return text


# ---------------------------------------------------------------- admin session

ADMIN_CSRF = None


def admin(method, path, body=None, raw=None, headers=None, expect=200):
    h = {"X-Requested-With": "XMLHttpRequest"}
    if ADMIN_CSRF:
        h["X-CSRF-TOKEN"] = ADMIN_CSRF
    h.update(headers or {})
    st, hd, txt = http(method, path, body=body, raw=raw, headers=h, opener=ADMIN_OPENER)
    if expect is not None and st != expect:
        sys.exit(f"admin {method} {path} -> {st}: {txt[:500]}")
    return parse(txt)


def png_bytes(w=4, h=4):
    """A tiny valid RGB PNG (red/blue checker)."""
    rows = b""
    for y in range(h):
        rows += b"\x00" + b"".join(b"\xff\x00\x00" if (x + y) % 2 == 0 else b"\x00\x00\xff" for x in range(w))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def field(name, type_, **kw):
    # shape of a field as the admin UI's fields-manager creates it
    f = {"name": name, "type": type_, "label": "", "info": "", "group": "", "i18n": False,
         "required": False, "multiple": False, "meta": {}, "opts": {}}
    f.update(kw)
    return f


def model(name, type_, fields, label=None):
    # shape of a model as the admin UI (Content\Controller\Models::create + model.php view) posts it
    return {"name": name, "label": label or name.capitalize(), "type": type_, "group": "", "color": None,
            "revisions": False, "fields": fields, "preview": [], "meta": None, "info": ""}


# ---------------------------------------------------------------- phase 1: setup

def setup():
    global ADMIN_CSRF
    st = {}

    # 1. installer
    s, h, txt = http("GET", "/install/", opener=ADMIN_OPENER)
    m = re.search(r">key</icon>([^<]+)</div>", txt)
    if s != 200 or not m:
        sys.exit(f"install failed: {s} {txt[:2000]}")
    st["admin_user"] = "admin"
    st["admin_password"] = m.group(1)
    print("installed; admin password:", st["admin_password"])

    # 2. login like the login page does
    s, h, txt = http("GET", "/auth/login", opener=ADMIN_OPENER)
    m = re.search(r'csrf:\s*"([^"]+)"', txt)
    if not m:
        sys.exit("no login csrf token found")
    res = admin("POST", "/auth/check", {"auth": {"user": "admin", "password": st["admin_password"]}, "csrf": m.group(1)})
    if not res.get("success"):
        sys.exit(f"login failed: {res}")
    ADMIN_CSRF = res["csrf"]

    # 3. locale "de"
    st["locale_de"] = admin("POST", "/system/locales/save",
                            {"locale": {"i18n": "de", "name": "Deutsch", "enabled": True, "meta": {}}})

    # 4. content models
    models = [
        model("authors", "collection", [field("name", "text")]),
        model("posts", "collection", [
            field("title", "text", required=True),
            field("body", "wysiwyg"),
            field("tags", "tags"),
            field("rating", "number"),
            field("published", "boolean"),
            field("author", "contentItemLink", opts={"link": "authors", "filter": None, "display": "${data.name}"}),
            field("image", "asset"),
            field("seo", "set", opts={"fields": [field("title", "text"), field("description", "textarea")],
                                      "display": None}),
            field("color", "color"),
            field("date", "date"),
            field("category", "select", opts={"options": ["news", "guides"], "multiple": False}),
            field("summary", "text", i18n=True),
        ]),
        model("settings", "singleton", [field("sitename", "text")]),
        model("menu", "tree", [field("label", "text")]),
    ]
    st["models_saved"] = {}
    for mdef in models:
        st["models_saved"][mdef["name"]] = admin("POST", "/content/models/save", {"model": mdef, "isUpdate": False})

    # 5. role that may only read posts
    st["role"] = admin("POST", "/system/users/roles/save", {"role": {
        "appid": "postsreader", "name": "Posts reader", "info": "may only read posts",
        "permissions": {"content/posts/read": True}}})

    # 6. API keys (key value generated the way the UI does: "API-" + /utils/generateToken)
    keys = {}
    for role, name in (("admin", "Full access"), ("postsreader", "Posts read only")):
        tok = admin("POST", "/utils/generateToken")["token"]
        keys[role] = admin("POST", "/system/api/save",
                           {"key": {"name": name, "key": f"API-{tok}", "role": role, "meta": {}}})
    st["api_keys"] = keys

    # 7. asset upload through the admin assets endpoint (no REST upload endpoint exists)
    boundary = "----cockpitrec" + uuid.uuid4().hex
    png = png_bytes()
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"pixel.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + png + f"\r\n--{boundary}--\r\n".encode()
    up = admin("POST", "/assets/upload", raw=body, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    if not up.get("assets"):
        sys.exit(f"upload failed: {up}")
    st["asset"] = up["assets"][0]
    st["asset_upload_response"] = up

    # 8. items via REST API, admin key
    K = {"api-key": keys["admin"]["key"]}
    created = {"authors": [], "posts": [], "settings": [], "menu": []}

    def rest_create(mname, data):
        s, h, txt = http("POST", f"/api/content/item/{mname}", {"data": data}, headers=K)
        if s != 200:
            sys.exit(f"REST create {mname} -> {s} {txt}")
        item = json.loads(txt)
        created[mname].append({"request": {"data": data}, "status": s, "response": item})
        return item

    ada = rest_create("authors", {"name": "Ada Lovelace"})
    grace = rest_create("authors", {"name": "Grace Hopper"})
    ghost = rest_create("authors", {"name": "Hidden Author", "_state": 0})
    def link(a):
        return {"_model": "authors", "_id": a["_id"]}

    rest_create("posts", {
        "title": "Hello World", "body": "<p>First <strong>post</strong></p>", "tags": ["news", "intro"],
        "rating": 5, "published": True, "author": link(ada), "image": st["asset"],
        "seo": {"title": "Hello SEO", "description": "Hello world description"},
        "color": "#ff0000", "date": "2024-01-15", "category": "news",
        "summary": "English summary one", "summary_de": "Deutsche Zusammenfassung eins"})
    rest_create("posts", {
        "title": "Second Post", "body": "<p>Second</p>", "tags": ["guides"], "rating": 3, "published": True,
        "author": link(grace), "seo": {"title": "Second SEO", "description": "Second description"},
        "color": "#00ff00", "date": "2024-02-20", "category": "guides", "summary": "Only english summary"})
    rest_create("posts", {
        "title": "Third Post", "body": "<p>Third</p>", "tags": [], "rating": 1, "published": False,
        "author": link(ada), "color": "#0000ff", "date": "2024-03-01", "category": "news",
        "summary": "Third summary", "summary_de": "Dritte Zusammenfassung"})
    rest_create("posts", {
        "title": "Draft Post", "body": "<p>Draft</p>", "tags": ["draft"], "rating": 4, "published": False,
        "author": link(grace), "category": "guides", "_state": 0})
    rest_create("posts", {
        "title": "Post By Hidden Author", "body": "<p>Fifth</p>", "tags": ["news"], "rating": 2.5,
        "published": True, "author": link(ghost), "date": "2024-04-10", "category": "news"})

    rest_create("settings", {"sitename": "My Cockpit Site"})

    # one tree item through REST (REST drops _pid/_o), the rest the way the admin UI creates tree items
    rest_create("menu", {"label": "REST-created menu item"})

    def tree_item(label, pid=None, o=0, state=1):
        item = {"label": label, "_state": state, "_pid": pid, "_o": o}
        res = admin("POST", "/content/models/saveItem/menu", {"item": item})
        created["menu"].append({"request": {"item": item}, "status": 200, "via": "admin /content/models/saveItem/menu",
                                "response": res})
        return res

    home = tree_item("Home", None, 0)
    about = tree_item("About", None, 1)
    team = tree_item("Team", about["_id"], 0)
    tree_item("Contact (unpublished)", about["_id"], 1, state=0)
    tree_item("History", team["_id"], 0)
    st["tree"] = {"home": home["_id"], "about": about["_id"], "team": team["_id"]}

    st["created"] = created
    st["ids"] = {
        "ada": ada["_id"], "grace": grace["_id"], "ghost": ghost["_id"],
        "posts": [c["response"]["_id"] for c in created["posts"]],
    }
    with open(ARGS.state, "w") as f:
        json.dump(st, f, indent=2)
    return st


# ---------------------------------------------------------------- phase 2: record

COUNTER = [0]
INDEX = []  # (file, description)
KEYS = {}   # role -> key


def rec(short, desc, method="POST", query=None, variables=None, role="admin", body=None, raw=None,
        extra_headers=None, params=None, content_type="application/json", key_override=None, path="/api/gql"):
    """Perform one call and save NN-short.json."""
    COUNTER[0] += 1
    nn = f"{COUNTER[0]:02d}"
    headers, shown = {}, {}
    if content_type and method != "GET":
        headers["Content-Type"] = shown["Content-Type"] = content_type
    if key_override is not None:
        headers["api-key"] = key_override[0]
        shown["api-key"] = key_override[1]
    elif role:
        headers["api-key"] = KEYS[role]
        shown["api-key"] = f"<{role} key>"
    for k, v in (extra_headers or {}).items():
        headers[k] = v[0]
        shown[k] = v[1]
    if body is None and raw is None and method != "GET" and query is not None:
        body = {"query": query}
        if variables is not None:
            body["variables"] = variables
    qs = ""
    if params is not None:
        qs = "?" + urllib.parse.urlencode(params)
    full = path + qs
    if raw is not None:
        s, h, txt = http(method, full, raw=raw, headers=headers)
        shown_body = raw
    elif body is not None:
        s, h, txt = http(method, full, raw=json.dumps(body), headers=headers)
        shown_body = body
    else:
        s, h, txt = http(method, full, headers=headers)
        shown_body = None
    shown_path = full
    if params and "api_key" in params:  # redact key passed as query param
        p2 = dict(params)
        p2["api_key"] = f"<{role} key>"
        shown_path = path + "?" + urllib.parse.urlencode(p2)
    fx = {
        "description": desc,
        "request": {"method": method, "path": shown_path, "headers": shown, "body": shown_body},
        "status": s,
        "response_headers": {"content-type": h.get("content-type")},
        "response": parse(txt),
    }
    fn = f"{nn}-{short}.json"
    with open(os.path.join(OUT, fn), "w") as f:
        json.dump(fx, f, indent=2, ensure_ascii=False)
        f.write("\n")
    # byte-exact body as sent by the server, for anyone who needs escaping/number formatting details
    os.makedirs(os.path.join(OUT, "raw"), exist_ok=True)
    with open(os.path.join(OUT, "raw", f"{nn}-{short}.body"), "w") as f:
        f.write(txt)
    INDEX.append((fn, desc, s))
    print(f"{fn}: {s} {txt[:160]!r}")
    return fx


FULL_INTROSPECTION = """
query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }
}
"""

SMALL_INTROSPECTION = """
{
  __schema {
    types { name kind }
    queryType { name fields { name args { name defaultValue type { ...T } } type { ...T } } }
    mutationType { name fields { name args { name defaultValue type { ...T } } type { ...T } } }
  }
  postsModel: __type(name: "postsModel") { name kind fields { name type { ...T } } }
  authorsModel: __type(name: "authorsModel") { name kind fields { name type { ...T } } }
  settingsModel: __type(name: "settingsModel") { name kind fields { name type { ...T } } }
  menuModel: __type(name: "menuModel") { name kind fields { name type { ...T } } }
  SetSeo: __type(name: "SetSeo") { name kind fields { name type { ...T } } }
  saveContentItemOutput: __type(name: "saveContentItemOutput") { name kind fields { name type { ...T } } }
  deleteContentItemOutput: __type(name: "deleteContentItemOutput") { name kind fields { name type { ...T } } }
  JsonType: __type(name: "JsonType") { name kind description }
  NumericType: __type(name: "NumericType") { name kind description }
}
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }
"""

POST_FIELDS = "_id _state _created _modified _cby _mby title body tags rating published author image seo { title description } color date category summary"


def record(st):
    KEYS["admin"] = st["api_keys"]["admin"]["key"]
    KEYS["postsreader"] = st["api_keys"]["postsreader"]["key"]
    ids = st["ids"]
    p1 = ids["posts"][0]

    # --- introspection
    rec("introspection-full", "Full standard introspection query (graphql-js getIntrospectionQuery shape).",
        query=FULL_INTROSPECTION)
    rec("introspection-small", "Type names, Query/Mutation root fields with args+defaults, and fields of the model types.",
        query=SMALL_INTROSPECTION)

    # --- content(...)
    rec("content-posts", "content(model: posts) - all published posts, default args.",
        query='{ content(model: "posts") }')
    rec("content-posts-limit", "content with limit: 2.", query='{ content(model: "posts", limit: 2) }')
    rec("content-posts-skip", "content with skip: 1 (no limit).", query='{ content(model: "posts", skip: 1) }')
    rec("content-posts-limit-skip", "content with limit: 2, skip: 1.", query='{ content(model: "posts", limit: 2, skip: 1) }')
    rec("content-posts-sort", "content with sort: {rating: -1} (JsonType literal; ints become floats).",
        query='{ content(model: "posts", sort: {rating: -1}) }')
    rec("content-posts-filter-literal-dollar", "filter with a `$gt` key written as a GraphQL literal: `$` is not a valid GraphQL name char -> syntax error.",
        query='{ content(model: "posts", filter: {rating: {$gt: 2}}) }')
    rec("content-posts-filter-var", "filter {rating: {$gt: 2}} passed through a JsonType variable.",
        query='query($f: JsonType) { content(model: "posts", filter: $f) }', variables={"f": {"rating": {"$gt": 2}}})
    rec("content-posts-filter-literal-simple", "filter as GraphQL object literal without operators: {category: \"guides\"}.",
        query='{ content(model: "posts", filter: {category: "guides"}) }')
    rec("content-posts-filter-string", "filter given as a JSON *string* literal: JsonType keeps it as string, resolver ignores non-array filter.",
        query='{ content(model: "posts", filter: "{\\"rating\\": {\\"$gt\\": 2}}") }')
    rec("content-posts-fields", "content with fields: {title: 1} projection.",
        query='{ content(model: "posts", fields: {title: 1}) }')
    rec("content-posts-fields-exclude", "content with fields: {body: 0, image: 0} (exclusion projection).",
        query='{ content(model: "posts", fields: {body: 0, image: 0}) }')
    rec("content-posts-populate", "content with populate: 1 (author links resolved; unpublished author?).",
        query='{ content(model: "posts", populate: 1) }')
    rec("content-posts-locale-de", "content with locale: \"de\".", query='{ content(model: "posts", locale: "de") }')
    rec("content-posts-locale-unknown", "content with locale: \"fr\" (not configured).",
        query='{ content(model: "posts", locale: "fr", fields: {title: 1, summary: 1}) }')
    rec("content-nosuchmodel", "content(model: nosuchmodel).", query='{ content(model: "nosuchmodel") }')
    rec("content-settings-singleton", "content(model: settings) on a singleton.", query='{ content(model: "settings") }')
    rec("content-menu-tree", "content(model: menu) on a tree model (flat list).", query='{ content(model: "menu") }')
    rec("content-missing-model-arg", "content without the required model argument.", query='{ content }')

    # --- contentTree(...)
    rec("contentTree-menu", "contentTree(model: menu).", query='{ contentTree(model: "menu") }')
    rec("contentTree-menu-parent", "contentTree(model: menu, parent: <About id>).",
        query='query($p: String) { contentTree(model: "menu", parent: $p) }', variables={"p": st["tree"]["about"]})
    rec("contentTree-menu-fields-locale", "contentTree with fields: {label: 1} and locale de.",
        query='{ contentTree(model: "menu", fields: {label: 1}, locale: "de") }')
    rec("contentTree-posts", "contentTree on a collection (not a tree).", query='{ contentTree(model: "posts") }')
    rec("contentTree-nosuchmodel", "contentTree on unknown model.", query='{ contentTree(model: "nosuchmodel") }')

    # --- <model>Model
    rec("postsModel", "postsModel with the main fields.",
        query="{ postsModel { _id title tags rating published author image seo { title description } } }")
    rec("postsModel-allfields", "postsModel with every field.", query=f"{{ postsModel {{ {POST_FIELDS} }} }}")
    rec("postsModel-id", "postsModel(_id: <first post id>).",
        query='query($id: String) { postsModel(_id: $id) { _id title rating } }', variables={"id": p1})
    rec("postsModel-id-and-filter", "postsModel with _id AND a filter at once (filter contradicts _id).",
        query='query($id: String) { postsModel(_id: $id, filter: {category: "guides"}) { _id title category } }',
        variables={"id": p1})
    rec("postsModel-filter-var", "postsModel filter {rating: {$gt: 2}} via variable.",
        query='query($f: JsonType) { postsModel(filter: $f) { _id title rating } }', variables={"f": {"rating": {"$gt": 2}}})
    rec("postsModel-filter-string", "postsModel(filter: \"{...}\") - JSON text as a String literal.",
        query='{ postsModel(filter: "{\\"category\\": \\"guides\\"}") { _id title category } }')
    rec("postsModel-limit-skip-sort", "postsModel(limit: 2, skip: 1, sort: {rating: -1}).",
        query='{ postsModel(limit: 2, skip: 1, sort: {rating: -1}) { _id title rating } }')
    rec("postsModel-projection", "postsModel(projection: \"title\") - projection arg is a String.",
        query='{ postsModel(projection: "title") { _id title rating } }')
    rec("postsModel-populate", "postsModel(populate: 1) with author.",
        query='{ postsModel(populate: 1) { _id title author } }')
    rec("postsModel-locale-de", "postsModel(locale: \"de\") with summary.",
        query='{ postsModel(locale: "de") { _id title summary } }')
    rec("postsModel-locale-default", "postsModel summary with default locale.",
        query='{ postsModel { _id title summary } }')
    rec("postsModel-nonexistent-id", "postsModel(_id: \"000000000000000000000000\").",
        query='{ postsModel(_id: "000000000000000000000000") { _id } }')
    rec("authorsModel", "authorsModel.", query="{ authorsModel { _id _state name } }")
    rec("settingsModel", "settingsModel { sitename }.", query="{ settingsModel { sitename } }")
    rec("settingsModel-all", "settingsModel with system fields and locale de.",
        query='{ settingsModel(locale: "de") { _id _state _created _modified _cby _mby sitename } }')
    rec("menuModel", "menuModel { _id label _pid _o }.", query="{ menuModel { _id label _pid _o } }")
    rec("menuModel-all", "menuModel with all system fields.",
        query="{ menuModel { _id _state _created _modified _cby _mby _pid _o label } }")
    rec("multi-root", "several root fields in one query with aliases.",
        query='{ a: postsModel(limit: 1) { title } b: settingsModel { sitename } c: content(model: "authors") n: __typename }')

    # --- restricted key (role postsreader: content/posts/read only)
    rec("restricted-content-posts", "postsreader key: content(model: posts).", role="postsreader",
        query='{ content(model: "posts", fields: {title: 1, author: 1}) }')
    rec("restricted-content-posts-populate", "postsreader key: content(model: posts, populate: 1) - authors not readable by role.",
        role="postsreader", query='{ content(model: "posts", populate: 1, fields: {title: 1, author: 1}) }')
    rec("restricted-postsModel", "postsreader key: postsModel.", role="postsreader",
        query="{ postsModel { _id title } }")
    rec("restricted-postsModel-populate", "postsreader key: postsModel(populate: 1) author.", role="postsreader",
        query="{ postsModel(populate: 1) { title author } }")
    rec("restricted-content-authors", "postsreader key: content(model: authors) - not allowed.", role="postsreader",
        query='{ content(model: "authors") }')
    rec("restricted-authorsModel", "postsreader key: authorsModel - not allowed.", role="postsreader",
        query="{ authorsModel { _id name } }")
    rec("restricted-settingsModel", "postsreader key: settingsModel - not allowed (nullable object).",
        role="postsreader", query="{ settingsModel { sitename } }")
    rec("restricted-contentTree-menu", "postsreader key: contentTree(menu) - not allowed.", role="postsreader",
        query='{ contentTree(model: "menu") }')
    rec("restricted-mixed", "postsreader key: allowed and denied root fields in one query.", role="postsreader",
        query='{ postsModel(limit: 1) { title } authorsModel { name } }')

    # --- no key / wrong key / other key transports
    rec("nokey-content-posts", "no api-key header at all.", role=None, query='{ content(model: "posts") }')
    rec("wrongkey-content-posts", "wrong api-key (API- prefixed, unknown).",
        key_override=("API-0000000000000000000000000000000000000000", "API-0000000000000000000000000000000000000000 (unknown key)"),
        query='{ content(model: "posts") }')
    rec("wrongkey-jwt-shaped", "api-key shaped like a JWT (aaa.bbb.ccc) - Cockpit's key check has an unfinished branch for it.",
        key_override=("aaa.bbb.ccc", "aaa.bbb.ccc"), query='{ content(model: "posts", limit: 1, fields: {title: 1}) }')
    rec("key-as-bearer", "admin key sent as Authorization: Bearer instead of api-key.", role=None,
        extra_headers={"Authorization": ("Bearer " + KEYS["admin"], "Bearer <admin key>")},
        query='{ content(model: "posts", limit: 1, fields: {title: 1}) }')
    rec("key-as-query-param", "admin key sent as ?api_key= query parameter.", role=None,
        params={"api_key": KEYS["admin"]}, query='{ content(model: "posts", limit: 1, fields: {title: 1}) }')

    # --- protocol edge cases
    rec("get-query", "GET /api/gql?query=... .", method="GET",
        params={"query": '{ postsModel(limit: 2) { _id title } }'})
    rec("get-query-variables-json", "GET with query and variables (JSON string) params.", method="GET",
        params={"query": 'query($l: Int) { postsModel(limit: $l) { title } }', "variables": json.dumps({"l": 1})})
    rec("get-no-query", "GET /api/gql without a query (default '{}').", method="GET")
    rec("post-empty-body", "POST with an empty JSON object body.", body={})
    rec("post-form-urlencoded", "POST application/x-www-form-urlencoded query=... .",
        content_type="application/x-www-form-urlencoded",
        raw=urllib.parse.urlencode({"query": '{ settingsModel { sitename } }'}))
    rec("post-text-plain", "POST raw GraphQL text with content-type application/graphql.",
        content_type="application/graphql", raw='{ settingsModel { sitename } }')
    rec("malformed-query", "syntax error in query text.", query='{ postsModel { _id title ')
    rec("malformed-json-body", "body that is not valid JSON.", raw='{"query": "{ __typename }"')
    rec("unknown-root-field", "unknown root field.", query='{ nosuchfield }')
    rec("unknown-field", "unknown field on postsModel.", query='{ postsModel { _id nosuchfield } }')
    rec("unknown-argument", "unknown argument on postsModel.", query='{ postsModel(nosucharg: 1) { _id } }')
    rec("missing-subselection", "object field without sub-selection.", query='{ postsModel }')
    rec("wrong-variable-type", "variable $l: Int given a string.",
        query='query($l: Int) { content(model: "posts", limit: $l) }', variables={"l": "abc"})
    rec("wrong-arg-literal-type", "limit: \"two\" as a literal.", query='{ content(model: "posts", limit: "two") }')
    rec("missing-required-variable", "required variable not provided.",
        query='query($m: String!) { content(model: $m) }', variables={})
    rec("variables-and-operation-name", "query with variables and operationName (single operation).",
        body={"query": 'query GetPosts($l: Int, $s: JsonType) { postsModel(limit: $l, sort: $s) { title rating } }',
              "variables": {"l": 2, "s": {"rating": 1}}, "operationName": "GetPosts"})
    rec("two-operations-with-operation-name", "document with two operations and operationName selecting one.",
        body={"query": 'query A { settingsModel { sitename } } query B { menuModel { label } }',
              "variables": {}, "operationName": "B"})
    rec("variables-as-json-string", "variables sent as a JSON-encoded string instead of an object.",
        body={"query": 'query($l: Int) { postsModel(limit: $l) { title } }', "variables": json.dumps({"l": 1})})
    rec("numeric-rating-variable", "NumericType variable in sort/limit? NumericType as variable: rating filter by exact value.",
        query='query($f: JsonType) { postsModel(filter: $f) { title rating } }', variables={"f": {"rating": 2.5}})
    rec("typename", "__typename on root and model types.",
        query='{ __typename postsModel(limit: 1) { __typename seo { __typename } } settingsModel { __typename } }')
    rec("fragments-directives", "fragments plus @include/@skip.",
        query='query($yes: Boolean!) { postsModel(limit: 2) { ...P seo @include(if: $yes) { title } rating @skip(if: $yes) } } fragment P on postsModel { _id title }',
        variables={"yes": True})

    # --- mutations (recorded last, so every read fixture above sees the initial data of 00-data.json)
    new = rec("mutation-save-new", "saveContentItem creating a new post (literal data object, no list values).",
              query='mutation { saveContentItem(model: "posts", data: {title: "Created via GraphQL", rating: 7, published: true, seo: {title: "t"}, unknownKey: "dropped"}) { item error } }')
    new_id = (((new["response"].get("data") or {}).get("saveContentItem") or {}).get("item") or {}).get("_id")
    rec("mutation-save-new-literal-list", "saveContentItem with a list inside the literal data (tags: [\"gql\"]).",
        query='mutation { saveContentItem(model: "posts", data: {title: "With list literal", tags: ["gql"]}) { item error } }')
    new2 = rec("mutation-save-new-vars", "saveContentItem new post with data in a variable (unpublished, _state 0).",
               query='mutation($d: JsonType!) { saveContentItem(model: "posts", data: $d) { item error } }',
               variables={"d": {"title": "Created via variables", "rating": 6, "tags": ["gql", "vars"], "_state": 0}})
    new2_id = (((new2["response"].get("data") or {}).get("saveContentItem") or {}).get("item") or {}).get("_id")
    rec("mutation-save-update", "saveContentItem updating the post created in mutation-save-new (only _id + title sent).",
        query='mutation($d: JsonType!) { saveContentItem(model: "posts", data: $d) { item error } }',
        variables={"d": {"_id": new_id, "title": "Updated via GraphQL"}})
    rec("mutation-save-update-readback", "read the updated item back via postsModel(_id) (no _cby/_mby selected).",
        query='query($id: String) { postsModel(_id: $id) { _id _state _created _modified title rating published seo { title } tags } }',
        variables={"id": new_id})
    rec("mutation-save-update-unknown-id", "saveContentItem with an _id that does not exist.",
        query='mutation($d: JsonType!) { saveContentItem(model: "posts", data: $d) { item error } }',
        variables={"d": {"_id": "000000000000000000000000", "title": "Ghost update"}})
    rec("mutation-save-invalid-data-string", "saveContentItem with data as a string.",
        query='mutation { saveContentItem(model: "posts", data: "not an object") { item error } }')
    rec("mutation-save-invalid-data-empty", "saveContentItem with data: {}.",
        query='mutation { saveContentItem(model: "posts", data: {}) { item error } }')
    rec("mutation-save-missing-data-arg", "saveContentItem without the required data argument.",
        query='mutation { saveContentItem(model: "posts") { item error } }')
    rec("mutation-save-missing-required", "saveContentItem without the model-required title (creates an item with title null).",
        query='mutation { saveContentItem(model: "posts", data: {rating: 1}) { item error } }')
    rec("mutation-save-unknown-model", "saveContentItem on an unknown model.",
        query='mutation { saveContentItem(model: "nosuchmodel", data: {title: "x"}) { item error } }')
    rec("mutation-save-singleton", "saveContentItem on the settings singleton.",
        query='mutation { saveContentItem(model: "settings", data: {sitename: "Renamed via GraphQL"}) { item error } }')
    rec("mutation-save-no-selection", "saveContentItem without a selection set.",
        query='mutation { saveContentItem(model: "posts", data: {title: "x"}) }')
    rec("mutation-delete-existing", "deleteContentItem on the post created in mutation-save-new-vars.",
        query='mutation($id: String!) { deleteContentItem(model: "posts", id: $id) { success error } }',
        variables={"id": new2_id})
    rec("mutation-delete-missing", "deleteContentItem with an id that does not exist.",
        query='mutation { deleteContentItem(model: "posts", id: "000000000000000000000000") { success error } }')
    rec("mutation-delete-singleton", "deleteContentItem on a singleton model.",
        query='mutation { deleteContentItem(model: "settings", id: "x") { success error } }')
    rec("mutation-delete-unknown-model", "deleteContentItem on an unknown model.",
        query='mutation { deleteContentItem(model: "nosuchmodel", id: "x") { success error } }')
    rec("mutation-via-get", "a mutation sent with GET ?query= (deleteContentItem of a missing id).", method="GET",
        params={"query": 'mutation { deleteContentItem(model: "posts", id: "000000000000000000000000") { success error } }'})
    rec("restricted-mutation-save", "postsreader key: saveContentItem (no create permission).", role="postsreader",
        query='mutation { saveContentItem(model: "posts", data: {title: "nope"}) { item error } }')
    rec("restricted-mutation-delete", "postsreader key: deleteContentItem (no delete permission).", role="postsreader",
        query='mutation { deleteContentItem(model: "posts", id: "000000000000000000000000") { success error } }')
    rec("postsModel-after-mutations", "postsModel list after all mutations (title of the no-title item is null on a String! field).",
        query="{ postsModel { _id title rating } }")


# ---------------------------------------------------------------- phase 3: data dump

def snapshot(st):
    """Every item as the REST API returns it (published only) + the admin listing (all states, raw)."""
    K = {"api-key": st["api_keys"]["admin"]["key"]}
    rest = {}
    for path in ("/api/content/items/authors", "/api/content/items/posts", "/api/content/item/settings",
                 "/api/content/items/menu", "/api/content/tree/menu"):
        s, h, txt = http("GET", path, headers=K)
        rest[path] = {"status": s, "response": parse(txt)}
    adm = {}
    for m in ("authors", "posts", "menu"):
        adm[m] = admin("POST", f"/content/collection/find/{m}", {"options": {"sort": {"_created": 1}}})
    return {"rest_api_admin_key": rest, "admin_find_all_states": adm}


def dump(st, before, after):
    data = {"note": "Everything created on the recording instance. Item ids/timestamps are real. "
                    "'before_graphql' is the state the GraphQL fixtures started from; 'after_graphql' "
                    "includes the effects of the mutation fixtures.",
            "locale_de": st["locale_de"], "role_postsreader": st["role"],
            "api_keys": {r: {k: (f"<redacted: {r} key>" if k == "key" else v) for k, v in d.items()}
                         for r, d in st["api_keys"].items()},
            "asset": st["asset"], "asset_upload_response": st["asset_upload_response"],
            "models_save_responses": st["models_saved"]}
    # models as stored on disk (PHP files) and as the admin API lists them
    data["models_stored_files"] = {}
    for p in sorted(glob.glob(os.path.join(ARGS.cockpit, "storage/content/*.model.php"))):
        with open(p) as f:
            data["models_stored_files"][os.path.relpath(p, ARGS.cockpit)] = f.read()
    data["models_admin_load"] = admin("GET", "/content/models/load")
    data["items_created"] = st["created"]
    data["before_graphql"] = before
    data["after_graphql"] = after
    with open(os.path.join(OUT, "00-data.json"), "w") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    st = setup()
    before = snapshot(st)
    record(st)
    after = snapshot(st)
    dump(st, before, after)
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump([{"file": a, "description": b, "status": c} for a, b, c in INDEX], f, indent=2)
    print("done:", len(INDEX), "fixtures")
