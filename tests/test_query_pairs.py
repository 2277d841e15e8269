"""The dispatcher's reading of the query string gives exactly the pairs
Starlette's (`parse_qsl` with blank values kept) gives, escapes, `+`,
empty parts, repeated keys and bytes beyond ASCII included."""

from __future__ import annotations

from urllib.parse import parse_qsl

from hypothesis import given, settings
from hypothesis import strategies as st

from quire.asgi import query_pairs
from tests.conftest import Api

PIECES = st.sampled_from(["a", "b", "=", "&", "+", "%", "%2", "%7B", "%zz", "%C3%A9", "%C3", "é", " ", ";", "limit",
                          "filter", "{", "}", "x" * 3, "\u00ff", "%00", "%2B", "%26", "%3D"])


@settings(max_examples=800, deadline=None)
@given(st.lists(PIECES, max_size=12).map("".join))
def test_the_pairs_are_parse_qsls(text: str) -> None:
    raw = text.encode("utf-8")
    assert query_pairs(raw) == parse_qsl(raw.decode("latin-1"), keep_blank_values=True)


def test_a_request_reads_its_parameters_through_them(admin: Api) -> None:
    admin.put("/api/system/models/posts", json={"name": "posts", "fields": [{"name": "title", "type": "text"}]})
    admin.post("/api/content/item/posts", json={"data": {"title": "a b+c"}})
    found = admin.get("/api/content/items/posts?filter=%7B%22title%22%3A%22a+b%2Bc%22%7D&limit=5&limit=9")
    assert found.status_code == 200 and [i["title"] for i in found.json()] == ["a b+c"]
