"""The store tests run on both backends: `any_store(request, folder)`
opens the backend of the fixture's parameter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.store import PostgresStore, SqliteStore, Store

BACKENDS = ["sqlite", "postgresql"]


def any_store(request: Any, folder: Path) -> Store:
    """A new, empty store of the backend `request.param` names."""
    if request.param == "postgresql":
        server = request.getfixturevalue("pg_server")
        return PostgresStore(server.fresh_url())
    return SqliteStore(folder / "store.db")
