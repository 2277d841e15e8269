"""Cockpit's Inbox addon data, where present: forms keep their ids and
tokens (the site's form addresses keep working), submissions their data,
spam flag, time and attachment files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from quire.app import build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.cockpit.conftest import KEYS, copy_site
from tests.commands import run_quire

FORM = "6b0bf0386860000000000f01"
TOKEN = "c0ffee-inbox-token-0001"
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def _inbox(site: Path) -> None:
    """Inbox data shaped as Cockpit's Inbox documentation shows it."""
    conn = sqlite3.connect(site / "storage" / "data" / "inbox.sqlite")
    for table in ("forms", "submissions"):
        conn.execute(f"CREATE TABLE `{table}` ( id INTEGER PRIMARY KEY AUTOINCREMENT, document TEXT )")
    conn.execute("INSERT INTO forms (document) VALUES (?)", (json.dumps({
        "_id": FORM, "name": "Contact", "token": TOKEN, "emails": ["team@example.com"], "domains": [],
        "fields": ["name", "email", "message", "resume"], "honeypot": "website", "store": True,
        "theme": "dark", "_created": 1700000000, "_modified": 1700000000}),))
    attachment = f"inbox/uploads/{FORM}/2024-01/resume.pdf"
    (site / "storage" / "uploads" / attachment).parent.mkdir(parents=True)
    (site / "storage" / "uploads" / attachment).write_bytes(PDF)
    conn.execute("INSERT INTO submissions (document) VALUES (?)", (json.dumps({
        "_id": "6b0bf0386860000000000f02", "form": FORM, "spam": False, "_created": 1700000100,
        "data": {"name": "John Doe", "email": "john@example.com", "message": "Hello!"},
        "attachments": {"resume": [{"name": "resume.pdf", "file": attachment, "size": len(PDF),
                                    "mime": "application/pdf"}]}}),))
    conn.execute("INSERT INTO submissions (document) VALUES (?)", (json.dumps({
        "_id": "6b0bf0386860000000000f03", "form": FORM, "spam": True, "_created": 1700000200,
        "data": {"name": "Spammer"},
        "attachments": {"resume": [{"name": "x.pdf", "file": "../../etc/passwd"}]}}),))
    conn.execute("INSERT INTO submissions (document) VALUES (?)", (json.dumps({
        "_id": "6b0bf0386860000000000f04", "form": "6b0bf0386860000000000fff", "data": {"a": 1}}),))
    conn.commit()
    conn.close()


def test_forms_and_submissions_come_over(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    _inbox(site)
    data = tmp_path / "data"
    done = run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    assert "forms: 1, with 2 submissions" in done.stdout and "1 forms, 2 form submissions" in done.stdout
    report = json.loads((data / "cockpit-import-report.json").read_text())
    about = {n["where"]: n for n in report["notes"]}
    assert about["Contact theme"]["value"] == "dark"
    assert "outside inbox/uploads" in about["submission 6b0bf0386860000000000f03"]["what"]
    assert "its form is not imported" in about["submission 6b0bf0386860000000000f04"]["what"]
    app = build_app(load_settings(str(data), env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        client = TestClient(app)
        admin = {"api-key": KEYS["admin"]}
        listed = client.get("/api/inbox/submissions", params={"form": FORM}, headers=admin).json()
        assert {s["_id"] for s in listed} == {"6b0bf0386860000000000f02", "6b0bf0386860000000000f03"}
        first = client.get("/api/inbox/submissions/6b0bf0386860000000000f02", headers=admin).json()
        assert first["data"]["message"] == "Hello!" and first["_created"] == 1700000100
        file = client.get("/api/inbox/submissions/6b0bf0386860000000000f02/attachments/resume/0", headers=admin)
        assert file.status_code == 200 and file.content == PDF
        # the site's form address keeps working
        sent = client.post(f"/api/inbox/submit/{TOKEN}", json={"data": {"name": "Ann", "message": "Hi"}})
        assert sent.status_code == 200, sent.text
        assert client.get("/api/inbox/forms/" + FORM, headers=admin).json()["emails"] == ["team@example.com"]
    finally:
        app.state.quire.close()
    again = run_quire("import", "--data", str(data), "--from-cockpit", str(site))
    assert "1 forms, 2 form submissions" in again.stdout
