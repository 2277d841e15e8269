"""A Cockpit 2 site made by a real Cockpit 2.13.2 (tests/fixtures/cockpit-site,
see its README), taken into a fresh Quire with `quire import --from-cockpit`."""

from __future__ import annotations

import json
import shutil
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


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Imported]:
    base = tmp_path_factory.mktemp("cockpit")
    site = copy_site(base / "cockpit")
    data = base / "data"
    done = run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    report = json.loads((data / "cockpit-import-report.json").read_text())
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    with TestClient(app) as client:
        yield Imported(data, done.stdout, report, client, app)
    app.state.quire.close()
