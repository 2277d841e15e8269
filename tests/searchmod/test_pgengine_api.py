"""The search API's tests again, with the PostgreSQL engine behind the
service instead of the embedded one (the content stays in the test's
store): the same answers, but for what the engines rank differently.

The tests are taken from their modules as they are; `app` here hands the
service a `PostgresEngine` on the test's own schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.events import Events
from quire.searchmod.pgengine import PostgresEngine
from tests.searchmod import test_following, test_highlight, test_indexes, test_query

# What differs on purpose (docs/search.md, "The PostgreSQL engine"), and
# what belongs to the embedded engine's files or another app than this one.
LEFT_OUT = {
    "test_rare_words_weigh_more_than_common_ones": "no IDF in ts_rank_cd",
    "test_cli_search_rebuild": "the CLI builds its own app (with the embedded engine)",
    "test_cli_search_rebuild_of_an_unknown_index_fails_clearly": "the CLI builds its own app",
    "test_cli_search_has_help": "nothing to do with an engine",
    # test_catch_up.py: another process or app writes with its own (embedded) engine
    "test_a_write_of_another_process_is_found_here": "the other process searches with the embedded engine",
    "test_rows_queued_during_a_build_reach_the_new_generation": "a second app with the embedded engine",
    "test_a_lost_index_directory_is_rebuilt_from_content": "the embedded engine's files; see test_pgengine_catch_up",
}


def take(into: dict[str, Any], *modules: ModuleType) -> None:
    """The modules' tests and fixtures, as if written in the module whose
    globals are `into`."""
    taken: dict[str, Any] = {}
    for module in modules:
        for name, value in vars(module).items():
            is_test = name.startswith("test_") and callable(value)
            is_fixture = type(value).__name__ == "FixtureFunctionDefinition" or hasattr(value, "_pytestfixturefunction")
            if not (is_test or is_fixture) or name in LEFT_OUT:
                continue
            assert name not in taken or taken[name] is value, f"{name} is defined twice"
            taken[name] = value
    into.update(taken)


take(globals(), test_query, test_highlight, test_following, test_indexes)


@pytest.fixture
def app(data_dir: Path, events: Events, app_env: dict[str, str], pg_url: str) -> Iterator[Any]:
    application = build_app(load_settings(data_dir, env=app_env), events)
    search = application.state.quire.search
    search.engine = search.follower.engine = PostgresEngine(lambda: psycopg.connect(pg_url))
    yield application
    application.state.quire.close()


def test_the_service_searches_with_the_postgresql_engine(quire: Any) -> None:
    assert isinstance(quire.search.engine, PostgresEngine)
    assert quire.search.follower.engine is quire.search.engine
