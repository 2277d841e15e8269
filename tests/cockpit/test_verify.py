"""`--verify URL --key KEY`: the imported site and the Cockpit site asked
the same, answer by answer (Cockpit's recorded answers, served again)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cockpit.conftest import KEYS, copy_site
from tests.cockpit.replay import replayed
from tests.commands import run_quire


def test_an_imported_site_answers_as_cockpit_did(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    data = tmp_path / "data"
    with replayed() as (url, asked):
        done = run_quire("import", "--data", str(data), "--from-cockpit", str(site), "--verify", url,
                         "--key", KEYS["admin"], check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "differences" in done.stdout and ", 0 differences" in done.stdout
    verified = json.loads((data / "cockpit-import-report.json").read_text())["verify"]
    # every request compared, and one before the import: is the site there, does it take the key?
    assert verified["differences"] == [] and verified["requests"] == len(asked) - 1 >= 35
    assert any(path.startswith("/api/content/tree/navigation?locale=de") for path in asked)
    assert any(path.startswith("/api/assets/") for path in asked)


def test_a_difference_is_named_and_the_exit_status_says_so(tmp_path: Path) -> None:
    def change(answer: dict[str, Any]) -> None:
        body = answer["body"]
        if answer["request"]["path"].startswith("/api/content/item/posts/") and isinstance(body, dict) \
                and body.get("title") == "Hello World":
            body["title"] = "Hello Cockpit"

    site = copy_site(tmp_path / "cockpit")
    with replayed(change) as (url, _):
        done = run_quire("import", "--data", str(tmp_path / "data"), "--from-cockpit", str(site), "--verify", url,
                         "--key", KEYS["admin"], check=False)
    assert done.returncode == 3
    assert "1 differences" in done.stdout
    assert ".title: 'Hello World' != 'Hello Cockpit'" in done.stdout


def test_verify_needs_a_key_and_a_cockpit_that_answers(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    done = run_quire("import", "--data", str(tmp_path / "d"), "--from-cockpit", str(site), "--verify",
                     "http://127.0.0.1:9", check=False)
    assert done.returncode == 2 and "--verify needs --key" in done.stderr
    done = run_quire("import", "--data", str(tmp_path / "d"), "--from-cockpit", str(site), "--verify",
                     "http://127.0.0.1:9", "--key", KEYS["admin"], check=False)
    assert done.returncode == 1 and "Cockpit did not answer" in done.stderr and "Traceback" not in done.stderr
    assert "nothing was imported" in done.stderr and "Imported" not in done.stdout
    done = run_quire("import", "--data", str(tmp_path / "d"), "--from-cockpit", str(site), "--verify",
                     "cms.example.com", "--key", KEYS["admin"], check=False)
    assert done.returncode == 2 and "--verify takes the Cockpit site's address" in done.stderr
