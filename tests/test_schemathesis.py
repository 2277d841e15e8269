"""Schemathesis against /api/openapi.json, in process: requests generated from
the document never get a 500, and every answer matches the document (status
documented, content type, body schema).

The app runs on a throw-away data dir holding the demo project plus a
submission with an attachment, a folder and a spare key. Most requests carry
an admin key, so the write endpoints run too; the others go without a key.
Path parameters are often replaced by names and ids that exist (otherwise
nearly every generated request would end in a 404), and the deletes run
last so the other operations find the seeded records.

The run is bounded: QUIRE_SCHEMATHESIS_EXAMPLES examples per operation
(default 8), derandomized so CI sees the same requests every time."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import checks as st_checks

from quire.app import build_app
from quire.config import load_settings
from quire.demo import contact_token, install_demo
from quire.events import Events
from tests.client import TestClient

Known = dict[tuple[str, str], list[str]]
EXAMPLES = int(os.environ.get("QUIRE_SCHEMATHESIS_EXAMPLES", "8"))
CHECKS = [
    st_checks.not_a_server_error,
    st_checks.status_code_conformance,
    st_checks.content_type_conformance,
    st_checks.response_schema_conformance,
]
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6300010000050001e2262bdb0000000049454e44ae426082"
)


def _seed(app: Any) -> tuple[str, Known]:
    """The demo project and a few more records; answers the admin key and
    existing values per (path prefix, parameter name)."""
    quire = app.state.quire
    _, key = asyncio.run(install_demo(quire))
    client = TestClient(app)
    headers = {"api-key": key}
    token = contact_token(quire)
    sent = client.post(f"/api/inbox/submit/{token}", data={"data[name]": "Ann", "data[email]": "ann@example.com",
                                                            "data[message]": "Hello"},
                       files={"data[attachment]": ("dot.png", PNG, "image/png")})
    assert sent.status_code == 200, sent.text
    for url, body in (("/api/assets/folders", {"data": {"name": "pictures"}}),
                      ("/api/system/keys", {"name": "spare", "role": "admin"})):
        answer = client.post(url, json=body, headers=headers)
        assert answer.status_code == 200, answer.text
    spare = answer.json()["_id"]
    assets = client.get("/api/assets", headers=headers).json()
    thumb = client.get(f"/api/assets/image/{assets[0]['_id']}?w=20&h=20", headers=headers)
    assert thumb.status_code == 200, thumb.text

    def ids(url: str, field: str = "_id") -> list[str]:
        answer = client.get(url, headers=headers)
        assert answer.status_code == 200, (url, answer.text)
        return [str(row[field]) for row in answer.json()]

    models = ids("/api/system/models", "name")
    known = {
        ("/api/content/", "model"): models,
        ("/api/content/item/", "id"): ids("/api/content/items/posts") + ids("/api/content/items/authors"),
        ("/api/system/models/", "name"): models,
        ("/api/system/roles/", "name"): ids("/api/system/roles", "name"),
        ("/api/system/keys/", "id"): [spare],  # not the admin key: the run needs it
        ("/api/assets/", "id"): [asset["_id"] for asset in assets],
        ("/api/assets/folders/", "id"): ids("/api/assets/folders"),
        ("/storage/uploads/", "path"): [asset["path"].lstrip("/") for asset in assets],
        ("/storage/thumbs/", "path"): [thumb.text.split("/storage/thumbs/")[1]],
        ("/api/pages/menu/", "name"): ids("/api/pages/menus", "name"),
        ("/api/pages/page/", "id"): ids("/api/pages/pages"),
        ("/api/l10n/", "name"): ["site"],
        ("/api/l10n/", "locale"): ["de", "en", "fr"],
        ("/api/inbox/submit/", "token"): [str(token)],
        ("/api/inbox/forms/", "id"): ids("/api/inbox/forms"),
        ("/api/inbox/submissions/", "id"): ids("/api/inbox/submissions"),
        ("/api/inbox/submissions/", "field"): ["attachment"],
        ("/api/inbox/submissions/", "n"): ["0"],
        ("/api/searchmod/", "name"): ["posts"],
        ("/api/searchmod/", "index"): ["posts"],
    }
    return key, known


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str, Known]]:
    data_dir: Path = tmp_path_factory.mktemp("schemathesis") / "data"
    app = build_app(load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true"}), Events())
    key, known = _seed(app)
    yield app, key, known
    app.state.quire.close()


def _known(known: Known, path: str, name: str) -> list[str]:
    """Existing values for parameter `name` of `path` (the longest prefix wins)."""
    matches = [(len(prefix), values) for (prefix, param), values in known.items()
               if param == name and path.startswith(prefix)]
    return max(matches, key=lambda m: m[0])[1] if matches else []


def _runner(operation: Any, key: str, known: Known, failures: list[str]) -> Callable[[], None]:
    """A hypothesis test of one operation; failed checks go to `failures`."""

    @given(case=operation.as_strategy(), data=st.data())
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def run(case: Any, data: Any) -> None:
        for name in case.path_parameters or {}:
            values = _known(known, operation.path, name)
            if values and not data.draw(st.booleans()):
                case.path_parameters[name] = data.draw(st.sampled_from(values))
        headers = {} if data.draw(st.integers(0, 3)) == 3 else {"api-key": key}
        response = case.call(headers=headers)
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except BaseExceptionGroup as exc:  # collected: one run reports every operation that fails
            failures.append(f"{operation.label}: {exc}\n   {case.as_curl_command(headers=headers)}")

    return run  # type: ignore[no-any-return]


def test_no_server_errors_and_answers_match_the_document(seeded: tuple[Any, str, Known]) -> None:
    app, key, known = seeded
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 70
    operations.sort(key=lambda operation: operation.method.upper() == "DELETE")
    failures: list[str] = []
    for operation in operations:
        _runner(operation, key, known, failures)()
    assert not failures, "\n\n".join(failures)
