"""Limits on admin form bodies: a form is small, url-encoded fields only;
anything else is refused with a 4xx, never a server error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tests.admin.conftest import SESSION_COOKIE, Browser, csrf_of, logged_in

LIMIT = 64 * 1024


def _login_form(browser: Browser) -> dict[str, str]:
    return {"csrf": csrf_of(browser.get("/auth/login").text), "user": "nobody", "password": "wrong password"}


def test_login_form_over_the_size_limit_is_413(browser: Browser) -> None:
    form = {**_login_form(browser), "password": "a" * (LIMIT + 1)}
    response = browser.post("/auth/login", data=form)
    assert response.status_code == 413


def test_admin_form_over_the_size_limit_is_413(app: Any) -> None:
    ann = logged_in(app)
    csrf = csrf_of(ann.get("/admin/keys").text)
    response = ann.post("/admin/keys", data={"csrf": csrf, "action": "create", "name": "a" * (LIMIT + 1),
                                             "role": "admin"})
    assert response.status_code == 413


def test_chunked_login_form_over_the_size_limit_is_413(browser: Browser) -> None:
    form = _login_form(browser)

    def body() -> Iterator[bytes]:
        yield f"csrf={form['csrf']}&user=nobody&password=".encode()
        for _ in range(10):
            yield b"a" * 10_000

    response = browser.post("/auth/login", content=body(),
                            headers={"content-type": "application/x-www-form-urlencoded"})
    assert "content-length" not in response.request.headers
    assert response.status_code == 413


def test_login_form_with_a_file_is_400(browser: Browser) -> None:
    response = browser.post("/auth/login", data=_login_form(browser), files={"f": ("a.txt", b"hello")})
    assert response.status_code == 400
    assert not browser.cookies.get(SESSION_COOKIE)


def test_login_form_with_too_many_fields_is_400(browser: Browser) -> None:
    form = {**{f"extra{i}": "x" for i in range(60)}, **_login_form(browser)}
    response = browser.post("/auth/login", data=form)
    assert response.status_code == 400


def test_admin_form_with_a_file_is_400(app: Any) -> None:
    ann = logged_in(app)
    csrf = csrf_of(ann.get("/admin/users").text)
    response = ann.post("/admin/users", data={"csrf": csrf, "action": "create"},
                        files={"f": ("a.txt", b"hello")})
    assert response.status_code == 400


def test_login_form_sent_as_json_is_refused(browser: Browser) -> None:
    browser.get("/auth/login")
    response = browser.post("/auth/login", json={"user": "nobody", "password": "x"})
    assert response.status_code == 400  # not a url-encoded form: refused before anything is read
    assert not browser.cookies.get(SESSION_COOKIE)
