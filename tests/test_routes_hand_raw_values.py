"""Routes hand the request's raw filter, sort and fields values to the
services, which parse them into the store's query tree: no route builds
query trees itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import quire
from quire.app import Quire
from quire.auth.service import Identity
from quire.errors import BadRequest

ADMIN = Identity("admin", key_id="tests")


def test_no_route_module_imports_the_query_parser() -> None:
    offenders = []
    for path in Path(quire.__file__).parent.rglob("routes.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("quire.store"):
                offenders.append(f"{path.parent.name}/{path.name}: {node.module}")
    assert offenders == []


def test_assets_service_parses_the_raw_values(quire: Quire) -> None:
    for title in ("b", "a", "c"):
        quire.assets.assets.insert({"title": title, "path": f"/{title}.txt"})
    docs, total = quire.assets.find({"title": {"$ne": "c"}}, {"title": 1}, 10, 0, {"title": 1})
    assert [d["title"] for d in docs] == ["a", "b"] and total == 2
    assert all(set(d) == {"_id", "title"} for d in docs)
    with pytest.raises(BadRequest):
        quire.assets.find({"title": {"$where": "1"}}, None, None, None, None)
    with pytest.raises(BadRequest):
        quire.assets.find(None, {"title": 2}, None, None, None)


def test_submissions_service_parses_the_raw_values(quire: Quire) -> None:
    for n in (1, 2, 3):
        quire.submissions.submissions.insert({"form": "f", "data": {"n": n}, "_created": n})
    docs, total = quire.submissions.find(ADMIN, None, {"data.n": {"$gt": 1}}, {"data.n": 1}, 10, 0, {"data": 1})
    assert [d["data"]["n"] for d in docs] == [2, 3] and total == 2
    with pytest.raises(BadRequest):
        quire.submissions.find(ADMIN, None, None, None, None, None, {"data": 1, "form": 0})
