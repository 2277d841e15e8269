"""Image presets (`[assets.presets]`, `/api/assets/image/{id}/{preset}` and
`?preset=`), `b64=1` data URIs, and Last-Modified on image bytes (issue 13
item 17)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.config import ConfigError, load_settings
from tests.assets.helpers import halves, open_image, upload_one
from tests.client import TestClient
from tests.conftest import Api

PDF = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"
TOML = """
[assets.presets]
thumb = { w = 20, h = 20, m = "thumbnail", mime = "png" }
wide = { w = 50, m = "fitToWidth", q = 60, mime = "jpeg" }
"""


@pytest.fixture
def api(data_dir: Path, app_env: dict[str, str]) -> Iterator[Api]:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "quire.toml").write_text(TOML)
    app = build_app(load_settings(data_dir, env=app_env))
    key = app.state.quire.auth.create_key("admin", "admin")["key"]
    yield Api(TestClient(app, raise_server_exceptions=False), str(key))
    app.state.quire.close()


@pytest.fixture
def picture(api: Api) -> dict[str, Any]:
    return upload_one(api, "wide.png", halves(200, 100), "image/png")


def image(api: Api, path: str, headers: dict[str, str] | None = None, **params: Any) -> Any:
    return api.get(f"/api/assets/image/{path}", params=params, headers=headers, follow_redirects=False)


# -- presets ------------------------------------------------------------------------


def test_a_preset_in_the_path_or_the_query_gives_its_image(api: Api, picture: dict[str, Any]) -> None:
    by_path = image(api, f"{picture['_id']}/thumb", o=1)
    assert by_path.status_code == 200, by_path.text
    assert by_path.headers["content-type"] == "image/png"
    assert open_image(by_path.content).size == (20, 20)
    by_query = image(api, picture["_id"], preset="thumb", o=1)
    assert by_query.content == by_path.content
    spelled_out = image(api, picture["_id"], w=20, h=20, m="thumbnail", mime="png", o=1)
    assert spelled_out.headers["etag"] == by_path.headers["etag"]  # the same file
    wide = open_image(image(api, f"{picture['_id']}/wide", o=1).content)
    assert (wide.format, wide.size) == ("JPEG", (50, 25))


def test_parameters_given_in_the_request_win_over_the_preset(api: Api, picture: dict[str, Any]) -> None:
    out = open_image(image(api, f"{picture['_id']}/thumb", w=30, mime="webp", o=1).content)
    assert (out.format, out.size) == ("WEBP", (30, 20))  # h and m still from the preset
    assert image(api, f"{picture['_id']}/thumb", w="").status_code == 200  # empty: not given


def test_unknown_preset_is_404_naming_it(api: Api, picture: dict[str, Any]) -> None:
    for response in (image(api, f"{picture['_id']}/huge"), image(api, picture["_id"], preset="huge")):
        assert response.status_code == 404
        assert response.json() == {"error": "Image preset 'huge' not found"}
    assert image(api, "0123456789abcdef01234567/thumb").json() == {"error": "Asset not found"}


def test_two_different_presets_are_400(api: Api, picture: dict[str, Any]) -> None:
    response = image(api, f"{picture['_id']}/thumb", preset="wide")
    assert response.status_code == 400
    assert "'thumb'" in response.json()["error"] and "'wide'" in response.json()["error"]
    assert image(api, f"{picture['_id']}/thumb", preset="thumb").status_code == 200


@pytest.mark.parametrize(("presets", "message"), [
    ({"thumb": {"w": 0}}, "setting 'assets.presets.thumb': w must be an integer from 1 to 4096"),
    ({"thumb": {"w": 10, "m": "crop"}}, "setting 'assets.presets.thumb': m must be one of"),
    ({"thumb": {"w": 10, "mime": "tiff"}}, "setting 'assets.presets.thumb': mime must be auto or one of"),
    ({"thumb": {"w": 10, "size": 3}}, "setting 'assets.presets.thumb': unknown keys size"),
    ({"thumb": {"q": 10}}, "setting 'assets.presets.thumb' needs w or h"),
    ({"a b": {"w": 10}}, "setting 'assets.presets.a b': a preset name is"),
    ({"thumb": 200}, "setting 'assets.presets' must be a table of name = "),
])
def test_a_wrong_preset_stops_the_start_naming_it(tmp_path: Path, presets: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(tmp_path, env={}, overrides={"assets": {"presets": presets}})
    assert message in str(raised.value)


def test_presets_can_come_from_the_environment_as_json(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, env={"QUIRE_ASSETS_PRESETS": '{"card": {"w": 300, "h": 200}}'})
    assert settings.get("assets", "presets") == {"card": {"w": 300, "h": 200}}


# -- b64 ------------------------------------------------------------------------------


def test_b64_answers_a_data_uri_of_the_image(api: Api, picture: dict[str, Any]) -> None:
    raw = image(api, picture["_id"], w=40, h=20, mime="png", o=1)
    inline = image(api, picture["_id"], w=40, h=20, mime="png", b64=1)
    assert inline.status_code == 200
    assert inline.headers["content-type"].startswith("text/plain")
    prefix = "data:image/png;base64,"
    assert inline.text.startswith(prefix)
    assert base64.b64decode(inline.text.removeprefix(prefix)) == raw.content
    # b64 wins over o and re; with a preset too
    assert image(api, picture["_id"], w=40, h=20, mime="png", b64=1, o=1, re=1).text == inline.text
    assert image(api, f"{picture['_id']}/thumb", b64=1).text.startswith(prefix)
    assert inline.headers["etag"] != raw.headers["etag"]
    assert image(api, picture["_id"], w=40, h=20, mime="png", b64=1,
                 headers={"if-none-match": inline.headers["etag"]}).status_code == 304


def test_b64_of_a_non_image_answers_the_original_url(api: Api) -> None:
    asset = upload_one(api, "doc.pdf", PDF)
    response = image(api, asset["_id"], w=10, b64=1)
    assert response.status_code == 200
    assert response.text == f"http://testserver/storage/uploads{asset['path']}"


def test_b64_must_be_0_or_1(api: Api, picture: dict[str, Any]) -> None:
    response = image(api, picture["_id"], w=10, b64=2)
    assert response.status_code == 400
    assert response.json() == {"error": "<b64> must be 0 or 1"}


# -- Last-Modified ---------------------------------------------------------------------------


def test_image_bytes_carry_last_modified_and_answer_if_modified_since(api: Api, picture: dict[str, Any]) -> None:
    response = image(api, picture["_id"], w=40, mime="png", o=1)
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert response.headers["etag"]
    modified = parsedate_to_datetime(response.headers["last-modified"])
    since = {"if-modified-since": response.headers["last-modified"]}
    assert image(api, picture["_id"], w=40, mime="png", o=1, headers=since).status_code == 304
    earlier = {"if-modified-since": formatdate(modified.timestamp() - 3600, usegmt=True)}
    assert image(api, picture["_id"], w=40, mime="png", o=1, headers=earlier).status_code == 200
    # If-None-Match decides when both are sent
    both = {**since, "if-none-match": '"other"'}
    assert image(api, picture["_id"], w=40, mime="png", o=1, headers=both).status_code == 200
    assert image(api, picture["_id"], w=40, mime="png", o=1,
                 headers={"if-modified-since": "not a date"}).status_code == 200


def test_stored_files_carry_last_modified_too(api: Api, picture: dict[str, Any]) -> None:
    url = image(api, picture["_id"], w=40, mime="png").text.removeprefix("http://testserver")
    for path in (url, f"/storage/uploads{picture['path']}"):
        served = api.get(path)
        assert served.status_code == 200
        assert parsedate_to_datetime(served.headers["last-modified"])
        assert api.get(path, headers={"if-modified-since": served.headers["last-modified"]}).status_code == 304


@pytest.mark.parametrize("since", ["Mon, 01 Jan 99999999999999 00:00:00 GMT", "not a date", "Mon, 32 Foo",
                                   "Mon, 01 Jan 0 00:00:00 GMT"])
def test_an_unparsable_if_modified_since_is_as_if_not_sent(api: Api, picture: dict[str, Any], since: str) -> None:
    for caller, path, params in ((api, f"/api/assets/image/{picture['_id']}", {"w": 40, "mime": "png", "o": 1}),
                                 (api.with_key(None), f"/storage/uploads{picture['path']}", {})):
        response = caller.get(path, params=params, headers={"if-modified-since": since})
        assert response.status_code == 200, (path, response.text)
        assert response.headers["last-modified"]


def test_an_unknown_preset_with_odd_characters_is_named_safely(api: Api, picture: dict[str, Any]) -> None:
    response = image(api, picture["_id"], preset="a\x00b")
    assert response.status_code == 404
    assert response.json() == {"error": "Image preset 'a\\x00b' not found"}


@pytest.mark.parametrize("value", ["٥٠", "+5", "5_000", " 5", "5 ", "0x10", "5.0"])
@pytest.mark.parametrize("name", ["w", "h", "q"])
def test_image_integers_are_ascii_digits_only(api: Api, picture: dict[str, Any], name: str, value: str) -> None:
    """docs/query-language.md, Limits and refused values: Python's int()
    would read `٥٠`, `+5` and `5_000`; Quire's parameters do not."""
    params = {"w": 10, "h": 10, name: value}
    response = image(api, picture["_id"], **params)
    assert (response.status_code, response.json()) == (400, {"error": f"<{name}> must be an integer"})
