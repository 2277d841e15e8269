"""Browsers for the studio: in-process TestClients logged in as users of
given roles, and helpers to post the studio's forms with their token."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from tests.admin.conftest import Browser, logged_in

__all__ = ["Browser", "logged_in", "page_csrf", "post_form"]


def page_csrf(html: str) -> str:
    """The session's token as a studio page carries it (for htmx requests)."""
    found = re.search(r'<meta name="csrf-token" content="([^"]+)">', html)
    assert found, "no CSRF token on the page"
    return found.group(1)


def post_form(browser: Browser, path: str, data: dict[str, Any] | list[tuple[str, str]],
              token_from: str = "/studio/content", **kwargs: Any) -> Any:
    """POST a studio form with the token of the page `token_from`."""
    csrf = page_csrf(browser.get(token_from).text)
    pairs = list(data.items()) if isinstance(data, dict) else list(data)
    headers = {"content-type": "application/x-www-form-urlencoded", **kwargs.pop("headers", {})}
    return browser.post(path, content=urlencode([("csrf", csrf), *pairs]), headers=headers, **kwargs)
