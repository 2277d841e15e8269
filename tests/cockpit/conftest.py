"""A Cockpit 2 site made by a real Cockpit 2.13.2 (tests/fixtures/cockpit-site,
see its README), taken into a fresh Quire with `quire import --from-cockpit`."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.commands import run_quire

SITE = Path(__file__).parent.parent / "fixtures" / "cockpit-site"
FACTS = json.loads((SITE / "site.json").read_text())
KEYS = {role: entry["key"] for role, entry in FACTS["api_keys"].items()}


def answers() -> list[dict[str, Any]]:
    """Every recorded answer with its request, by file name."""
    return [{**json.loads((SITE / "answers" / entry["file"]).read_text()), "file": entry["file"]}
            for entry in json.loads((SITE / "answers" / "index.json").read_text())]


def copy_site(to: Path) -> Path:
    """A copy of the Cockpit folder (the import only reads it; a test that
    breaks it breaks its own copy)."""
    shutil.copytree(SITE / "storage", to / "storage")
    return to


@dataclass
class Imported:
    data: Path
    out: str
    report: dict[str, Any]
    client: TestClient
    app: Any

    def get(self, path: str, key: str, **params: str) -> Any:
        return self.client.get(path, params=params, headers={"api-key": KEYS[key]})


def mongo_export(site: Path, to: Path) -> Path:
    """The site's databases as `mongoexport` writes a Cockpit site on
    MongoDB: a file per collection (`content_collections_posts.json`), a
    document a line, ids as `{"$oid": ...}`; and the site folder without
    its data/ (models and uploads stay files on MongoDB too)."""
    to.mkdir()
    for database in sorted((site / "storage" / "data").glob("*.sqlite")):
        conn = sqlite3.connect(database)
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence'"):
            name = table if database.stem == "app" else f"{database.stem}_{table}"
            with (to / f"{name}.json").open("w") as out:
                for (text,) in conn.execute(f'SELECT document FROM "{table}" ORDER BY id'):
                    doc = json.loads(text)
                    doc["_id"] = {"$oid": doc["_id"]}
                    out.write(json.dumps(doc) + "\n")
        conn.close()
    shutil.rmtree(site / "storage" / "data")
    return to


@pytest.fixture(scope="module", params=["sqlite", "mongo"])
def imported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Imported]:
    """The site taken in from its SQLite files, and from a MongoDB export of the same data."""
    base = tmp_path_factory.mktemp("cockpit")
    site = copy_site(base / "cockpit")
    data = base / "data"
    extra = []
    if request.param == "mongo":
        extra = ["--mongo-export", str(mongo_export(site, base / "export"))]
    done = run_quire("import", "--data", str(data), "--from-cockpit", str(site), *extra)
    report = json.loads((data / "cockpit-import-report.json").read_text())
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    with TestClient(app) as client:
        yield Imported(data, done.stdout, report, client, app)
    app.state.quire.close()
