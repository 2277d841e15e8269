"""Catching up (test_catch_up.py) with the PostgreSQL engine behind the
service, and what stands for the embedded engine's lost directory: lost
tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest

from quire.app import Quire, build_app
from quire.config import load_settings
from quire.events import Events
from quire.searchmod.follow import Marks
from quire.searchmod.pgengine import PostgresEngine, table_prefix
from tests.conftest import Api, create_item
from tests.searchmod import test_catch_up
from tests.searchmod.helpers import error_of, search, search_response

# On a SQLite store with the PostgreSQL engine swapped in (the run on
# PostgreSQL has both, and runs test_catch_up's own tests there).
pytestmark = pytest.mark.sqlite_only

# another process or app here writes with its own (embedded) engine
LEFT_OUT = {
    "test_a_write_of_another_process_is_found_here",
    "test_rows_queued_during_a_build_reach_the_new_generation",
    "test_a_lost_index_directory_is_rebuilt_from_content",
}


def take(into: dict[str, Any], *modules: ModuleType) -> None:
    """The modules' tests and fixtures, as if written in the module whose
    globals are `into`."""
    for module in modules:
        for name, value in vars(module).items():
            is_test = name.startswith("test_") and callable(value)
            is_fixture = type(value).__name__ == "FixtureFunctionDefinition" or hasattr(value, "_pytestfixturefunction")
            if (is_test or is_fixture) and name not in LEFT_OUT:
                into[name] = value


take(globals(), test_catch_up)


@pytest.fixture
def app(data_dir: Path, events: Events, app_env: dict[str, str], pg_url: str) -> Iterator[Any]:
    """An app whose search service searches with the PostgreSQL engine."""
    application = build_app(load_settings(data_dir, env=app_env), events)
    search = application.state.quire.search
    search.engine = search.follower.engine = PostgresEngine(lambda: psycopg.connect(pg_url))
    yield application
    application.state.quire.close()


def test_lost_tables_answer_503_until_a_rebuild(posts: Api, quire: Quire, pg_url: str) -> None:
    create_item(posts, "posts", {"title": "sturdy tortoise"})
    live = Marks(quire.store, "ix").live()
    assert live is not None
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'DROP TABLE "{table_prefix("ix")}{live["generation"]}"')
    assert error_of(search_response(posts, "ix", "tortoise"), 503) == "Index 'ix' has lost its tables: rebuild it"
    assert posts.post("/api/searchmod/indexes/ix/rebuild").status_code == 200
    assert [h["title"] for h in search(posts, "ix", "tortoise")["hits"]] == ["sturdy tortoise"]
