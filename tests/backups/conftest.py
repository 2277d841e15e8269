"""A site to back up (on the run's backend: `data_dir`, `app_env`), and an
empty target to restore into: another folder, and on PostgreSQL another
schema of the test server."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.config import load_settings
from tests.conftest import backend


@dataclass
class Target:
    data: Path
    env: dict[str, str]  # QUIRE_* of the target (its database on PostgreSQL)

    def open(self) -> Any:
        return build_app(load_settings(self.data, env={"QUIRE_SERVER_QUIET": "1", "QUIRE_MODULES_PACKAGES": "false",
                                                       **self.env}))


@pytest.fixture
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    env: dict[str, str] = {}
    if backend(request.config) == "postgresql":
        server = request.getfixturevalue("pg_server")
        url = server.reused_url()
        env["QUIRE_STORE_URL"] = url
        yield Target(tmp_path / "restored", env)
        server.recycle(url)
        return
    yield Target(tmp_path / "restored", env)


def rows(store: Any) -> dict[str, list[bytes]]:
    """Every copied collection's documents as stored, in insertion order."""
    from quire.migrate import is_copied

    with store.snapshot() as snapshot:
        return {name: [row for chunk in snapshot.rows(name) for row in chunk]
                for name in snapshot.names() if is_copied(name)}
