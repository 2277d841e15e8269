"""A user made with `quire users create` logs into the admin shell (the
command itself is covered by tests/test_cli.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.admin.conftest import login, new_browser
from tests.commands import run_quire


def test_user_created_on_the_command_line_logs_into_the_admin(tmp_path: Path,
                                                              app_with: Callable[..., Any]) -> None:
    data = tmp_path / "cli-data"
    result = run_quire("users", "create", "--user", "cli", "--email", "cli@example.org",
                       "--role", "admin", "--data", str(data), stdin="a password from stdin\n", check=False)
    assert result.returncode == 0, result.stderr
    browser = new_browser(app_with(data=data))
    response = login(browser, "cli", "a password from stdin", next="/admin/users")
    assert response.status_code == 303
    assert response.headers["location"] == "/admin/users"
    page = browser.get("/admin/users")
    assert page.status_code == 200
    assert "cli@example.org" in page.text
