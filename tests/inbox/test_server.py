"""Forms on the real server (`quire serve --workers 2`) over HTTP: 200
concurrent submissions, some with files, each land exactly once; the rate
limit is shared by the worker processes."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from quire.config import load_settings
from quire.files import Files, open_files
from tests.inbox.conftest import PDF, multipart, png
from tests.serving import quire_server
from tests.storage import stored_keys


class Server:
    def __init__(self, base: str, key: str, data: Path, uploads: Files) -> None:
        self.base, self.key, self.data = base, key, data
        self.uploads = uploads  # where the server keeps uploads (folder or bucket), seen from the test

    def call(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
             key: bool = True) -> tuple[int, Any]:
        request = urllib.request.Request(self.base + path, data=body, method=method, headers=headers or {})
        if key:
            request.add_header("api-key", self.key)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


@contextlib.contextmanager
def running(data: Path, app_env: dict[str, str], **env: str) -> Iterator[Server]:
    """`quire serve --workers 2` on a free port, with an admin key."""
    files = open_files(load_settings(data, env=app_env).assets, data)
    try:
        with quire_server(data, {**app_env, **env}) as (base, key, _):
            yield Server(base, key, data, files.under("uploads"))
    finally:
        files.close()


def create_form(server: Server, **fields: Any) -> dict[str, Any]:
    status, form = server.call("POST", "/api/inbox/forms", json.dumps({"data": {"name": "Load", **fields}}).encode(),
                               {"content-type": "application/json"})
    assert status == 200, form
    return form  # type: ignore[no-any-return]


@pytest.fixture
def server(tmp_path: Path, app_env: dict[str, str]) -> Iterator[Server]:
    with running(tmp_path / "data", app_env, QUIRE_INBOX_RATE_LIMIT="0") as server:
        yield server


def test_200_concurrent_submissions_land_exactly_once(server: Server) -> None:
    form = create_form(server, fields=["marker", "kind", "files"])
    images = {i: png((i % 256, 7, 7)) for i in range(200) if i % 3 == 0}

    def one(i: int) -> tuple[int, Any]:
        marker = f"m{i:03d}"
        if i % 3 == 0:  # multipart with a file (every sixth also a PDF)
            parts: list[tuple[Any, ...]] = [("data[marker]", marker), ("data[kind]", "multipart"),
                                            ("data[files][]", f"{marker}.png", images[i], "image/png")]
            if i % 6 == 0:
                parts.append(("data[files][]", f"{marker}.pdf", PDF, "application/pdf"))
            body, headers = multipart(parts)
        elif i % 3 == 1:
            body = json.dumps({"data": {"marker": marker, "kind": "json"}}).encode()
            headers = {"content-type": "application/json"}
        else:
            body = urlencode({"data[marker]": marker, "data[kind]": "form"}).encode()
            headers = {"content-type": "application/x-www-form-urlencoded"}
        return server.call("POST", f"/api/inbox/submit/{form['token']}", body, headers, key=False)

    with ThreadPoolExecutor(max_workers=40) as pool:
        results = list(pool.map(one, range(200)))
    failures = [r for r in results if r[0] != 200]
    assert failures == []
    answered = {r[1]["record"]["_id"]: r[1]["record"] for r in results}
    assert len(answered) == 200

    status, records = server.call("GET", f"/api/inbox/submissions?form={form['_id']}")
    assert status == 200
    assert len(records) == 200
    assert {r["_id"]: r for r in records} == answered
    markers = Counter(r["data"]["marker"] for r in records)
    assert markers == Counter(f"m{i:03d}" for i in range(200))

    expected: dict[str, bytes] = {}
    for record in records:
        i = int(record["data"]["marker"][1:])
        files = record["attachments"].get("files", [])
        wanted = [images[i]] + ([PDF] if i % 6 == 0 else []) if i % 3 == 0 else []
        assert [a["size"] for a in files] == [len(w) for w in wanted]
        for item, content in zip(files, wanted, strict=True):
            expected[item["file"]] = content
    assert len(expected) == 67 + 34  # every attachment has its own file
    assert stored_keys(server.uploads, "inbox") == sorted(expected)  # each file once, nothing else (no .part left)
    for key, content in expected.items():
        assert server.uploads.read(key) == content

    some = next(iter(expected))
    status, body = server.call("GET", "/storage/uploads/" + some, key=False)
    assert status == 404 and "error" in body


def test_the_rate_limit_holds_across_both_workers(tmp_path: Path, app_env: dict[str, str]) -> None:
    with running(tmp_path / "data", app_env, QUIRE_INBOX_RATE_LIMIT="10") as server:
        form = create_form(server)

        def one(i: int) -> int:
            body = json.dumps({"data": {"n": i}}).encode()
            return server.call("POST", f"/api/inbox/submit/{form['token']}", body,
                               {"content-type": "application/json"}, key=False)[0]

        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = Counter(pool.map(one, range(16)))
        assert statuses == Counter({200: 10, 429: 6})
        status, records = server.call("GET", f"/api/inbox/submissions?form={form['_id']}")
        assert len(records) == 10
