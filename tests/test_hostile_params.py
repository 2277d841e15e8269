"""Hostile query parameters on every GET route: integers beyond 64 bits,
JSON5's NaN and Infinity, NUL characters and lone surrogates, sorts with
thousands of keys, filters with thousands of conditions. Each answer is a 4xx
with the JSON error shape (or, where a route does not take the parameter, a
complete 200), never a 500, for an admin and for anonymous callers alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quire.app import MODULES, build_app
from quire.asgi import Route
from quire.config import load_settings
from quire.store.query import MAX_CONDITIONS, MAX_SORT_KEYS
from quire.store.values import MAX_NESTING
from tests.client import TestClient, call
from tests.conftest import Api

EXAMPLES = int(__import__("os").environ.get("QUIRE_PROPERTY_EXAMPLES", "150"))


class Site:
    """One app with a little of everything, read by an admin and by the
    public role (granted every read permission, so parameters get parsed)."""

    def __init__(self, data: Path) -> None:
        self.app = build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "true"}))
        quire = self.app.state.quire
        client = TestClient(self.app, raise_server_exceptions=False)
        self.admin = Api(client, str(quire.auth.create_key("edge", "admin")["key"]))
        self.anon = Api(client, None)
        a = self.admin
        fields = [{"name": "title", "type": "text"}, {"name": "n", "type": "number"}]
        for model, kind in (("posts", "collection"), ("tree", "tree"), ("single", "singleton")):
            assert a.put(f"/api/system/models/{model}", json={"name": model, "type": kind, "fields": fields}).is_success
        self.item = a.post("/api/content/item/posts", json={"data": {"title": "t", "n": 1}}).json()["_id"]
        a.post("/api/content/item/tree", json={"data": {"title": "t"}})
        assert a.put("/api/searchmod/indexes/idx", json={"model": "posts", "fields": ["title"]}).is_success
        assert a.put("/api/l10n/project/proj", json={"data": {"name": "proj", "locales": ["en"]}}).is_success
        form = a.post("/api/inbox/forms", json={"data": {"name": "f"}}).json()
        self.form = form["_id"]
        reads = {p: True for m in MODULES for p in m.permissions if p.endswith(("/read", "/submissions"))}
        reads["content/*/read"] = True
        assert a.put("/api/system/roles/public", json={"permissions": reads}).is_success
        self.paths = [self.concrete(r.path) for r in self.app.routes if isinstance(r, Route)
                      and "GET" in r.methods and r.path.startswith(("/api/", "/storage/"))]

    def concrete(self, path: str) -> str:
        model = "tree" if path.startswith("/api/content/tree/") else "posts"
        if "/l10n/" in path:
            name = "proj"
        elif "/searchmod/" in path:
            name = "idx"
        elif "/pages/" in path:
            name = "main"
        else:
            name = "posts"
        item = self.form if "/inbox/forms/" in path else self.item
        for key, value in (("{model}", model), ("{name}", name), ("{id}", item), ("{index}", "idx"),
                           ("{locale}", "en"), ("{path:path}", "a/b.png"), ("{field}", "f"), ("{n}", "0"),
                           ("{token}", "no-such-token")):
            path = path.replace(key, value)
        return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    built = Site(tmp_path_factory.mktemp("hostile") / "data")
    yield built
    built.app.state.quire.close()


def check(response: Any, url: str) -> None:
    """A 4xx with `{"error": "..."}`, or a whole answer; never a 500."""
    assert response.status_code < 500, (url[:300], response.status_code, response.text[:300])
    kind = response.headers.get("content-type", "")
    if response.status_code >= 400:
        assert kind.startswith("application/json"), (url[:300], kind)
        body = response.json()
        assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"], body
    elif kind.startswith("application/json"):
        json.loads(response.content)  # complete, not cut off after the headers


def send(site: Site, name: str, value: str) -> None:
    """The parameter to every GET route, with the admin key and without a
    key; straight to the app (tests/client.py: `call`), as this sends about
    200 requests a value."""
    query = f"{name}={quote(value, safe='')}"
    for path in site.paths:
        for headers in ({"api-key": site.admin.key or ""}, {}):
            url = f"{path}?{query}"
            check(call(site.app, "GET", url, headers), url)


# ------------------------------------------------------------------ values

BIG = [str(2**63), str(2**64), str(-(2**63) - 1), "9" * 40]
NON_FINITE = ["NaN", "Infinity", "-Infinity", "+Infinity", "1e400"]
BAD_TEXT = ["\\ud800", "a\\udfffb", "\\u0000", "x\\u0000"]
# JSON texts with a slot `@` for a hostile number or text
NUMBER_SLOTS = [
    '{"n": {"$size": @}}', '{"n": {"$mod": [@, 1]}}', '{"n": {"$mod": [2, @]}}', '{"n": @}',
    '{"n": {"$gt": @}}', '{"n": {"$in": [1, @]}}', '{n: {$lte: @}}', '{"$or": [{"n": @}]}',
    '{"a": {"$elemMatch": {"b": @}}}', '{"n": {"$not": {"$size": @}}}',
]
TEXT_SLOTS = [
    '{"@": 1}', '{"title": "@"}', '{"title": {"$regex": "@"}}', '{"a.@": {"$exists": true}}',
    '{"title": {"$in": ["@"]}}', '{"$and": [{"@": 1}]}',
]


def fill(template: str, value: str) -> str:
    return template.replace("@", value)


def conditions(n: int, shape: str = "$and") -> str:
    """A filter of `n` conditions in one logical operator."""
    return json.dumps({shape: [{"n": i} for i in range(n)]}, separators=(",", ":"))


def sort_keys(n: int) -> str:
    return json.dumps({f"f{i}": 1 for i in range(n)}, separators=(",", ":"))


def wrapped(name: str, spec: str) -> list[tuple[str, str]]:
    """A hostile filter as every parameter that carries one."""
    if name != "filter":
        return [(name, spec)]
    return [(name, spec), ("models", fill('{"posts": {"filter": @}}', spec)), ("pipeline", fill('[{"$match": @}]', spec))]


def fixed_cases() -> list[tuple[str, str]]:
    cases: list[tuple[str, str]] = []
    for param in ("limit", "skip", "populate", "offset"):
        cases += [(param, v) for v in [*BIG, *NON_FINITE, "+5", " 5", "5_0", "\u0663", "1.5"]]
    for number in BIG + NON_FINITE:
        for slot in NUMBER_SLOTS:
            cases += wrapped("filter", fill(slot, number))
        cases += [("sort", fill('{"n": @}', number)), ("fields", fill('{"n": @}', number)),
                  ("models", fill('{"posts": {"limit": @, "skip": @}}', number)),
                  ("persona_vars", fill('{"a": @}', number))]
    for text in BAD_TEXT:
        for slot in TEXT_SLOTS:
            cases += wrapped("filter", fill(slot, text))
        cases += [("sort", fill('{"@": 1}', text)), ("fields", fill('{"@": 1}', text)),
                  ("persona_vars", fill('{"@": "x"}', text)), ("persona_vars", fill('{"a": "@"}', text))]
    for raw in ("a\x00b", "\x00"):  # a NUL sent as %00
        cases += [("filter", fill('{"title": "@"}', raw)), ("locale", raw), ("q", raw), ("persona", raw),
                  ("filter[title]", raw), ("persona_vars[a]", raw), ("api_key", raw)]
    many = MAX_CONDITIONS * 2
    cases += wrapped("filter", conditions(many))
    cases += wrapped("filter", json.dumps({"n": {"$in": list(range(many))}}, separators=(",", ":")))
    cases += wrapped("filter", sort_keys(many))  # many fields, each a condition
    cases += [("sort", sort_keys(2000))]
    return cases


FIXED = fixed_cases()


@pytest.mark.parametrize(("name", "value"), FIXED, ids=[f"{n}={v[:40]}" for n, v in FIXED])
def test_hostile_parameter_is_a_4xx_on_every_route(site: Site, name: str, value: str) -> None:
    send(site, name, value)


# A generated mix of the same classes, in places the fixed list does not name.
numbers = st.one_of(
    st.integers(min_value=2**63, max_value=2**200).map(str),
    st.integers(min_value=-(2**200), max_value=-(2**63) - 1).map(str),
    st.sampled_from(NON_FINITE),
)
bad_chars = st.one_of(st.integers(0xD800, 0xDFFF).map(lambda c: f"\\u{c:04x}"), st.just("\\u0000"))
texts = st.tuples(st.text("abc.", max_size=3), bad_chars, st.text("xyz", max_size=3)).map("".join)
many = st.integers(MAX_CONDITIONS + 1, MAX_CONDITIONS * 2)  # URLs stay under the server's 64 KB


@st.composite
def hostile(draw: st.DrawFn) -> tuple[str, str]:
    kind = draw(st.sampled_from(["int", "number", "text", "conditions", "sort"]))
    if kind == "int":
        return draw(st.sampled_from(["limit", "skip", "populate", "offset"])), draw(numbers)
    if kind == "number":
        spec = fill(draw(st.sampled_from(NUMBER_SLOTS)), draw(numbers))
        return draw(st.sampled_from([*wrapped("filter", spec), ("persona_vars", spec)]))
    if kind == "text":
        spec = fill(draw(st.sampled_from(TEXT_SLOTS)), draw(texts))
        return draw(st.sampled_from([*wrapped("filter", spec), ("sort", spec), ("fields", spec),
                                     ("persona_vars", spec)]))
    if kind == "conditions":
        n = draw(many)
        spec = conditions(n, draw(st.sampled_from(["$or", "$nor"])))
        return draw(st.sampled_from(wrapped("filter", spec)))
    n = draw(st.integers(MAX_SORT_KEYS + 1, 2000))
    return "sort", sort_keys(n)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=hostile())
def test_generated_hostile_parameters_are_never_a_500(site: Site, case: tuple[str, str]) -> None:
    send(site, *case)


# ------------------------------------------------------------------ the limits themselves


@pytest.mark.parametrize("shape", ["$or", "$and", "$nor"])
def test_a_filter_at_the_condition_limit_runs_on_every_backend(site: Site, shape: str) -> None:
    """The limit is below what SQLite refuses: the largest filter allowed
    runs on lists compiled to SQL, trees, pages and submissions alike."""
    at_limit = conditions(MAX_CONDITIONS, shape)
    in_list = json.dumps({"n": {"$in": list(range(MAX_CONDITIONS))}})
    for spec in (at_limit, in_list):
        for path in ("/api/content/items/posts", "/api/content/item/posts", "/api/content/tree/tree",
                     "/api/pages/pages", "/api/assets", "/api/inbox/submissions"):
            response = site.admin.get(f"{path}?filter={quote(spec)}")
            assert response.status_code in (200, 404), (path, response.status_code, response.text[:200])
            json.loads(response.content)
    for spec in (conditions(MAX_CONDITIONS + 1, shape), json.dumps({"n": {"$in": list(range(MAX_CONDITIONS + 1))}})):
        over = site.admin.get(f"/api/content/items/posts?filter={quote(spec)}")
        assert over.json() == {"error": f"filter has more than {MAX_CONDITIONS} conditions"}


def test_sort_keys_and_integers_at_their_limits(site: Site) -> None:
    assert site.admin.get(f"/api/content/items/posts?sort={quote(sort_keys(MAX_SORT_KEYS))}").status_code == 200
    response = site.admin.get(f"/api/content/items/posts?sort={quote(sort_keys(MAX_SORT_KEYS + 1))}")
    assert response.json() == {"error": f"sort has more than {MAX_SORT_KEYS} keys"}
    top = 2**63 - 1
    assert site.admin.get(f"/api/content/items/posts?limit={top}&skip={top}").json()["data"] == []
    response = site.admin.get(f"/api/content/items/posts?limit={top + 1}")
    assert response.json() == {"error": f"<limit> must be at most {top}"}
    assert site.admin.get("/api/content/items/posts?limit=+1").json() == {"error": "<limit> must be an integer"}
    spec = quote(json.dumps({"n": {"$mod": [top, -top - 1]}, "a": {"$size": top}}))
    assert site.admin.get(f"/api/content/items/posts?filter={spec}").json() == []


@pytest.mark.parametrize(("spec", "message"), [
    ('{"n": {"$size": NaN}}', "<filter> contains a number that is not finite (NaN or Infinity)"),
    ('{"n": {"$mod": [Infinity, 1]}}', "<filter> contains a number that is not finite (NaN or Infinity)"),
    ('{"n": 9223372036854775808}', "<filter> contains an integer outside -2^63 .. 2^63-1"),
    ('{"n\\u0000": 1}', "<filter> contains a NUL character or a lone surrogate"),
    ('{"title": "\\ud800"}', "<filter> contains a NUL character or a lone surrogate"),
])
def test_messages_name_the_parameter_and_the_problem(site: Site, spec: str, message: str) -> None:
    response = site.anon.get(f"/api/content/items/posts?filter={quote(spec)}")
    assert (response.status_code, response.json()) == (400, {"error": message})


def test_the_query_parser_applies_the_same_limits_to_filters_from_anywhere() -> None:
    """Filters that do not come through a query parameter (a body, a stored
    index, an aggregation's $match) meet the same checks in the parser."""
    from quire.errors import BadRequest
    from quire.store.query import parse_filter, parse_sort

    for spec in ({"n": float("nan")}, {"n": {"$size": float("inf")}}, {"n": {"$mod": [2**63, 1]}},
                 {"n": {"$in": [2**64]}}, {"a\x00": 1}, {"t": {"$regex": "\ud800"}}, {"t": "\ud800"},
                 {"$or": [{"n": i} for i in range(MAX_CONDITIONS + 1)]}):
        with pytest.raises(BadRequest):
            parse_filter(spec)
    with pytest.raises(BadRequest):
        parse_sort({f"f{i}": 1 for i in range(MAX_SORT_KEYS + 1)})
    assert parse_filter({"n": {"$mod": [2.9, 1.2]}}).value == (2, 1)  # cut off, as MongoDB does


def test_storage_paths_with_a_nul_are_400(site: Site) -> None:
    for path in ("/storage/uploads/a%00b.png", "/storage/thumbs/%00", "/api/content/item/posts/%00"):
        response = site.anon.get(path)
        assert response.status_code == 400, (path, response.text)
        assert response.json() == {"error": "The path cannot contain NUL characters"}


@pytest.mark.parametrize("header", ['{"a": "\\ud800"}', "{a: NaN}", '{"a\\u0000": 1}', '{"a": 9223372036854775808}'])
def test_the_persona_vars_header_meets_the_same_checks(site: Site, header: str) -> None:
    response = site.anon.get("/api/content/items/posts", headers={"x-persona-vars": header, "x-persona-audience": "m"})
    assert response.status_code == 400 and response.json()["error"].startswith("<X-Persona-Vars> contains")


@pytest.mark.parametrize("declared", ["²", "٥", "+5", "5_0", " 5", "-1", "0x10", ""])
def test_content_length_is_ascii_digits_only_everywhere(declared: str) -> None:
    """One parser reads Content-Length for JSON bodies, uploads and form
    submissions; str.isdigit() and int() would take `²`, `٥`, `+5` or `5_0`."""
    from quire.errors import BadRequest
    from quire.http import content_length
    from quire.inbox.service import check_request_size

    with pytest.raises(BadRequest, match="Invalid Content-Length"):
        content_length(declared)
    with pytest.raises(BadRequest, match="Invalid Content-Length"):
        check_request_size(declared, 10)
    assert content_length(None) is None
    assert content_length("0012") == 12
    assert content_length("9" * 40) == 2**63


def test_a_json_body_with_a_strange_content_length_is_400(site: Site) -> None:
    response = site.admin.post("/api/content/item/posts", content=b'{"data":{"title":"x"}}',
                               headers={"content-type": "application/json", "content-length": "+22"})
    assert (response.status_code, response.json()) == (400, {"error": "Invalid Content-Length"})


def nested(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


@pytest.mark.parametrize("depth", [300, 900])
@pytest.mark.parametrize("name", ["filter", "sort", "fields", "persona_vars", "models", "pipeline"])
def test_deeply_nested_parameters_are_a_400(site: Site, name: str, depth: int) -> None:
    """JSON nested hundreds of levels deep (the JSON parser takes up to 1,024)
    used to reach recursive code (locale keys, orjson's encoder, limited to
    254 levels) and gave a 500; it is refused when parsed, bracket form too."""
    spec = fill('[{"$match": @}]', nested(depth)) if name == "pipeline" else nested(depth)
    bracket = f"{name}{'[a]' * depth}=1"
    for path in ("/api/content/items/posts", "/api/content/item/posts", "/api/content/tree/tree",
                 "/api/pages/pages", "/api/assets", "/api/inbox/submissions", "/api/content/aggregate/posts",
                 "/api/content/items"):
        for api in (site.admin, site.anon):
            for url in (f"{path}?{name}={quote(spec, safe='')}", f"{path}?{bracket}"):
                response = api.get(url)
                check(response, url)
    home = {"models": "/api/content/items", "pipeline": "/api/content/aggregate/posts"}
    response = site.admin.get(f"{home.get(name, '/api/content/items/posts')}?{name}={quote(spec, safe='')}")
    assert response.json() == {"error": f"<{name}> is nested deeper than {MAX_NESTING} levels"}


def test_nesting_at_the_limit_is_read() -> None:
    from quire.store.values import unsafe

    assert unsafe(json.loads(nested(MAX_NESTING - 1, "[]"))) is None
    assert unsafe(json.loads(nested(MAX_NESTING, "[]"))) == f"is nested deeper than {MAX_NESTING} levels"


@pytest.mark.parametrize("path", ["/storage/uploads/" + "a" * 300, "/storage/thumbs/" + "a" * 5000 + ".png",
                                  "/storage/uploads/" + "a/" * 3000 + "x"])
def test_storage_paths_too_long_for_the_file_system_are_404(site: Site, path: str) -> None:
    """A name past the OS limit (255 bytes a name, 4 KB a path) made stat()
    raise ENAMETOOLONG: a 500."""
    response = site.anon.get(path)
    assert (response.status_code, response.json()) == (404, {"error": "File not found"})
