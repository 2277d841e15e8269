"""Fixtures and helpers of the forms (`inbox`) tests.

`app` is the root conftest's app with extra settings: a test (or a module)
overrides `inbox_env` to change `[inbox]` / `[smtp]` settings through their
QUIRE_* variables.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from PIL import Image

from quire.app import Quire, build_app
from quire.config import load_settings
from quire.events import Events
from tests.client import TestClient
from tests.conftest import Api
from tests.storage import stored_keys

PDF = (b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
       b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
HTML = b"<!doctype html><html><body><script>alert(1)</script></body></html>"
SCRIPT = b"#!/bin/sh\nrm -rf /\n"
EXE = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + b"\x00" * 48 + b"PE\x00\x00" + b"\x00" * 64


def multipart(parts: list[tuple[Any, ...]], boundary: str = "----WebKitFormBoundaryq8Jm3ZBb2xTKQ9bB",
              ) -> tuple[bytes, dict[str, str]]:
    """A multipart/form-data body as a browser builds it: `(name, value)` for
    a text input, `(name, filename, bytes, type)` for a file input (an empty
    file input is `(name, "", b"", "application/octet-stream")`)."""
    out = b""
    for part in parts:
        out += f"--{boundary}\r\n".encode()
        if len(part) == 2:
            name, value = part
            out += f'Content-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + str(value).encode()
        else:
            name, filename, content, kind = part
            out += (f'Content-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                    f"Content-Type: {kind}\r\n\r\n").encode() + content
        out += b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return out, {"content-type": f"multipart/form-data; boundary={boundary}"}


def urlencoded(pairs: list[tuple[str, str]]) -> tuple[bytes, dict[str, str]]:
    """An application/x-www-form-urlencoded body, repeated names kept."""
    return urlencode(pairs).encode(), {"content-type": "application/x-www-form-urlencoded"}


def png(color: tuple[int, int, int] = (255, 0, 0), size: int = 4) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size, size), color).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def inbox_env() -> dict[str, str]:
    """Extra QUIRE_* settings of the app (none: the defaults)."""
    return {}


@pytest.fixture
def app(data_dir: Path, events: Events, app_env: dict[str, str], inbox_env: dict[str, str]) -> Iterator[Any]:
    env = {**app_env, **inbox_env}
    application = build_app(load_settings(data_dir, env=env), events)
    yield application
    application.state.quire.close()


def make_form(admin: Api, **fields: Any) -> dict[str, Any]:
    """Create a form (name "Contact" unless given) and answer it."""
    response = admin.post("/api/inbox/forms", json={"data": {"name": "Contact", **fields}})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def submit(client: TestClient, token: str, **kw: Any) -> Any:
    """POST to the public submit endpoint, without following redirects."""
    kw.setdefault("follow_redirects", False)
    return client.post(f"/api/inbox/submit/{token}", **kw)


def inbox_files(quire: Quire) -> list[str]:
    """The keys (as attachments name them: `inbox/uploads/...`) of every
    stored form attachment, in the data folder or the bucket."""
    return stored_keys(quire.assets.uploads, "inbox")


def stored(quire: Quire, form_id: str | None = None) -> list[dict[str, Any]]:
    """The stored submission records (of one form), read from the store."""
    quire.store.refresh()
    return quire.store.collection("inbox/submissions").find({"form": form_id} if form_id else None)


@pytest.fixture
def form(admin: Api) -> dict[str, Any]:
    """A form that takes any field, with one recipient and no restrictions."""
    return make_form(admin, group="site", emails=["team@example.com"])
