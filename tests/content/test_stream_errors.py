"""Streamed lists: a failing query still answers with its status and JSON;
a failure after the status was sent is logged and breaks the answer off."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.errors import StoreBusy
from quire.store.sqlite import Collection
from tests.conftest import Api, create_item, put_model


@pytest.fixture
def app(data_dir: Path) -> Iterator[Any]:
    # the access log on: these tests read it
    application = build_app(load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "false"}))
    yield application
    application.state.quire.close()


@pytest.fixture
def posts(admin: Api) -> Api:
    put_model(admin, "posts", fields=[{"name": "n", "type": "number"}])
    for n in range(3):
        create_item(admin, "posts", {"n": n})
    return admin


ORIGINAL = Collection.stream_raw


def failing_at(after_chunks: int, error: Exception) -> Any:
    """stream_raw raising `error` in place of chunk number `after_chunks`,
    or after the last chunk if there are fewer."""
    def stream_raw(self: Collection, *args: Any, **kwargs: Any) -> Iterator[list[bytes]]:
        for i, rows in enumerate(ORIGINAL(self, *args, **kwargs)):
            if i == after_chunks:
                raise error
            yield rows
        raise error

    return stream_raw


def test_a_query_failing_at_its_start_answers_its_error_not_200(
    posts: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Collection, "stream_raw", failing_at(0, StoreBusy("The database is busy")))
    response = posts.get("/api/content/items/posts")
    assert response.status_code == 503
    assert response.json() == {"error": "The database is busy"}
    assert response.headers["retry-after"] == "1"

    monkeypatch.setattr(Collection, "stream_raw", failing_at(0, RuntimeError("disk I/O error")))
    response = posts.get("/api/content/items/posts")
    assert response.status_code == 500
    assert response.json() == {"error": "Internal server error"}


def test_a_streamed_list_still_streams(posts: Api) -> None:
    response = posts.get("/api/content/items/posts", params={"sort": '{"n": 1}'})
    assert response.status_code == 200
    assert [i["n"] for i in response.json()] == [0, 1, 2]
    assert posts.get("/api/content/items/posts", params={"filter": '{"n": 9}'}).json() == []


@pytest.mark.anyio
async def test_a_failure_mid_stream_is_logged_and_marked_in_the_access_log(
    posts: Api, app: Any, admin_key: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(Collection, "stream_raw", failing_at(1, RuntimeError("disk I/O error")))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    caplog.set_level(logging.INFO)
    async with httpx.AsyncClient(transport=transport, base_url="http://quire") as http:
        response = await http.get("/api/content/items/posts", headers={"api-key": admin_key})
    # the status had gone out with the first rows; the body was not ended
    assert response.status_code == 200
    assert response.content.startswith(b"[") and not response.content.endswith(b"]")
    errors = [r for r in caplog.records if r.name == "quire" and r.levelno == logging.ERROR]
    assert len(errors) == 1 and "broke off" in errors[0].getMessage()
    assert errors[0].exc_info is not None and "disk I/O error" in str(errors[0].exc_info[1])
    access = [r.getMessage() for r in caplog.records if r.name == "quire.access"]
    assert access[-1].startswith("GET /api/content/items/posts 200 ")
    assert access[-1].endswith(" broken off")
