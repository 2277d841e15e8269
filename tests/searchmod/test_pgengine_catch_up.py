"""Catching up (test_catch_up.py) with the PostgreSQL engine behind the
service, and what stands for the embedded engine's lost directory: lost
tables."""

from __future__ import annotations

import psycopg

from quire.app import Quire
from quire.searchmod.follow import Marks
from quire.searchmod.pgengine import table_prefix
from tests.conftest import Api, create_item
from tests.searchmod import test_catch_up
from tests.searchmod.helpers import error_of, search, search_response
from tests.searchmod.test_pgengine_api import app, take

__all__ = ["app"]  # the fixture that puts the PostgreSQL engine behind the service

take(globals(), test_catch_up)


def test_lost_tables_answer_503_until_a_rebuild(posts: Api, quire: Quire, pg_url: str) -> None:
    create_item(posts, "posts", {"title": "sturdy tortoise"})
    live = Marks(quire.store, "ix").live()
    assert live is not None
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'DROP TABLE "{table_prefix("ix")}{live["generation"]}"')
    assert error_of(search_response(posts, "ix", "tortoise"), 503) == "Index 'ix' has lost its tables: rebuild it"
    assert posts.post("/api/searchmod/indexes/ix/rebuild").status_code == 200
    assert [h["title"] for h in search(posts, "ix", "tortoise")["hits"]] == ["sturdy tortoise"]
