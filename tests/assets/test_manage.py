"""Managing assets: list, get, metadata update, delete (file and generated
images), and folders (issue 3 item 1, behaviour.md section 3)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quire.app import Quire
from quire.files import LocalFiles
from tests.assets.helpers import BLUE, GREEN, RED, solid, upload_one
from tests.conftest import Api, role_key
from tests.storage import stored_keys


@pytest.fixture
def three(admin: Api) -> list[dict[str, Any]]:
    """Three assets, uploaded in this order."""
    return [
        upload_one(admin, "charlie.png", solid(4, 4, RED), tags="red"),
        upload_one(admin, "alpha.txt", b"some text"),
        upload_one(admin, "bravo.png", solid(6, 3, BLUE), tags="blue"),
    ]


def ids(docs: list[dict[str, Any]]) -> list[str]:
    return [d["_id"] for d in docs]


def folder(admin: Api, name: str, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    response = admin.post("/api/assets/folders", json={"data": {"name": name, "parent": parent, **extra}})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


# -- list -----------------------------------------------------------------------


def test_list_is_a_bare_array_in_upload_order(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.get("/api/assets")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == three


def test_list_with_limit_and_skip_has_data_and_total(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.get("/api/assets", params={"limit": 1, "skip": 1})
    assert response.status_code == 200
    body = response.json()
    assert body == {"data": [three[1]], "meta": {"total": 3}}



def test_limit_zero_means_no_limit_as_for_content(admin: Api, three: list[dict[str, Any]]) -> None:
    """As in content lists and Cockpit: `limit=0` is no limit (it gave [])."""
    assert admin.get("/api/assets", params={"limit": 0}).json() == three
    assert admin.get("/api/assets", params={"limit": 0, "skip": 1}).json() == {"data": three[1:], "meta": {"total": 3}}

def test_list_with_limit_only_is_a_bare_array(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.get("/api/assets", params={"limit": 2})
    assert response.status_code == 200
    assert ids(response.json()) == ids(three[:2])


def test_list_total_counts_the_filtered_assets(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.get("/api/assets", params={"filter": json.dumps({"type": "image"}), "limit": 10, "skip": 0})
    assert response.status_code == 200
    body = response.json()
    assert body["meta"] == {"total": 2}
    assert ids(body["data"]) == [three[0]["_id"], three[2]["_id"]]


def test_list_filter_by_mime(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.get("/api/assets", params={"filter": json.dumps({"mime": "text/plain"})})
    assert response.status_code == 200
    assert ids(response.json()) == [three[1]["_id"]]


def test_list_filter_relaxed_json_and_operators(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.get("/api/assets", params={"filter": "{tags: {$in: ['blue']}}"})
    assert response.status_code == 200
    assert ids(response.json()) == [three[2]["_id"]]
    wide = admin.get("/api/assets", params={"filter": json.dumps({"width": {"$gte": 5}})})
    assert ids(wide.json()) == [three[2]["_id"]]


def test_list_sort(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.get("/api/assets", params={"sort": json.dumps({"title": 1})})
    assert response.status_code == 200
    assert [a["title"] for a in response.json()] == ["alpha.txt", "bravo.png", "charlie.png"]
    down = admin.get("/api/assets", params={"sort": json.dumps({"title": -1})})
    assert [a["title"] for a in down.json()] == ["charlie.png", "bravo.png", "alpha.txt"]


def test_list_fields_projection(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.get("/api/assets", params={"fields": json.dumps({"title": 1, "mime": 1})})
    assert response.status_code == 200
    assert response.json() == [{"_id": a["_id"], "title": a["title"], "mime": a["mime"]} for a in three]
    no_id = admin.get("/api/assets", params={"fields": json.dumps({"title": 1, "_id": 0})})
    assert no_id.json() == [{"title": a["title"]} for a in three]


@pytest.mark.parametrize(("params", "word"), [
    ({"filter": "{not json"}, "filter"),
    ({"sort": "[oops"}, "sort"),
    ({"fields": json.dumps({"title": 1, "mime": 0})}, ""),
    ({"filter": json.dumps({"title": {"$where": "1"}})}, "$where"),
    ({"limit": "ten"}, "limit"),
])
def test_list_bad_parameters_are_400(admin: Api, three: list[dict[str, Any]], params: dict[str, str],
                                     word: str) -> None:
    response = admin.get("/api/assets", params=params)
    assert response.status_code == 400
    assert word in response.json()["error"]


def test_list_needs_assets_read(anon: Api, admin: Api, three: list[dict[str, Any]]) -> None:
    assert anon.get("/api/assets").status_code == 401
    other = role_key(admin, "writer", {"assets/upload": True})
    response = other.get("/api/assets")
    assert response.status_code == 403
    assert "error" in response.json()
    reader = role_key(admin, "reader", {"assets/read": True})
    assert reader.get("/api/assets").json() == three


# -- get ------------------------------------------------------------------------


def test_get_by_id(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.get(f"/api/assets/{three[2]['_id']}")
    assert response.status_code == 200
    assert response.json() == three[2]


@pytest.mark.parametrize("asset_id", ["0123456789abcdef01234567", "not-an-id", "ZZZ"])
def test_get_unknown_asset_is_404(admin: Api, asset_id: str) -> None:
    response = admin.get(f"/api/assets/{asset_id}")
    assert response.status_code == 404
    assert response.json() == {"error": "Asset not found"}


def test_get_without_key_is_401(anon: Api, three: list[dict[str, Any]]) -> None:
    response = anon.get(f"/api/assets/{three[0]['_id']}")
    assert response.status_code == 401
    assert "error" in response.json()


# -- update ---------------------------------------------------------------------


def test_update_every_editable_field(admin: Api, three: list[dict[str, Any]]) -> None:
    target = folder(admin, "Photos")
    asset = three[0]
    data = {"title": "Red square", "description": "A red one", "tags": ["a", "b"], "altText": "red",
            "folder": target["_id"], "fp": {"x": 0.25, "y": 0.75}}
    response = admin.post(f"/api/assets/{asset['_id']}", json={"data": data})
    assert response.status_code == 200, response.text
    body = response.json()
    for key, value in data.items():
        assert body[key] == value
    for key in ("_id", "path", "mime", "size", "_hash", "_created", "width", "height", "colors"):
        assert body[key] == asset[key]
    assert body["_modified"] >= asset["_modified"]
    assert admin.get(f"/api/assets/{asset['_id']}").json() == body


def test_update_is_partial(admin: Api, three: list[dict[str, Any]]) -> None:
    asset = three[0]
    admin.post(f"/api/assets/{asset['_id']}", json={"data": {"title": "First", "altText": "alt"}})
    response = admin.post(f"/api/assets/{asset['_id']}", json={"data": {"title": "Second"}})
    assert response.status_code == 200
    assert response.json()["title"] == "Second" and response.json()["altText"] == "alt"
    assert response.json()["tags"] == ["red"]


def test_update_folder_and_fp_to_null(admin: Api, three: list[dict[str, Any]]) -> None:
    target = folder(admin, "Photos")
    asset_id = three[0]["_id"]
    admin.post(f"/api/assets/{asset_id}", json={"data": {"folder": target["_id"], "fp": {"x": 1, "y": 0}}})
    response = admin.post(f"/api/assets/{asset_id}", json={"data": {"folder": None, "fp": None}})
    assert response.status_code == 200
    assert response.json()["folder"] is None and response.json()["fp"] is None


@pytest.mark.parametrize(("data", "field"), [
    ({"title": 5}, "title"),
    ({"description": ["x"]}, "description"),
    ({"altText": None}, "altText"),
    ({"tags": "a,b"}, "tags"),
    ({"tags": [1, 2]}, "tags"),
    ({"folder": "0123456789abcdef01234567"}, "folder"),
    ({"folder": 7}, "folder"),
    ({"fp": {"x": 2, "y": 0.5}}, "fp"),
    ({"fp": {"x": 0.5}}, "fp"),
    ({"fp": [0.5, 0.5]}, "fp"),
    ({"fp": {"x": True, "y": 0.5}}, "fp"),
])
def test_update_with_invalid_value_is_400_naming_the_field(admin: Api, three: list[dict[str, Any]],
                                                           data: dict[str, Any], field: str) -> None:
    asset = three[0]
    response = admin.post(f"/api/assets/{asset['_id']}", json={"data": data})
    assert response.status_code == 400
    body = response.json()
    assert field in body["error"] and body["fields"] == [field]
    assert admin.get(f"/api/assets/{asset['_id']}").json() == asset


@pytest.mark.parametrize("field", ["mime", "path", "size", "_hash", "width", "nonsense"])
def test_update_of_unknown_or_read_only_field_is_400(admin: Api, three: list[dict[str, Any]], field: str) -> None:
    asset = three[0]
    response = admin.post(f"/api/assets/{asset['_id']}", json={"data": {field: "x", "title": "ok"}})
    assert response.status_code == 400
    body = response.json()
    assert field in body["error"] and body["fields"] == [field]
    assert admin.get(f"/api/assets/{asset['_id']}").json() == asset


@pytest.mark.parametrize("body", [{}, {"data": None}, {"data": "title"}, {"data": [1]}, {"title": "x"}])
def test_update_without_data_object_is_412(admin: Api, three: list[dict[str, Any]], body: Any) -> None:
    response = admin.post(f"/api/assets/{three[0]['_id']}", json=body)
    assert response.status_code == 412
    assert response.json() == {"error": "Item data is missing"}


def test_update_with_invalid_json_is_400(admin: Api, three: list[dict[str, Any]]) -> None:
    response = admin.post(f"/api/assets/{three[0]['_id']}", content=b"{nope",
                          headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "error" in response.json()


def test_update_unknown_asset_is_404(admin: Api) -> None:
    response = admin.post("/api/assets/0123456789abcdef01234567", json={"data": {"title": "x"}})
    assert response.status_code == 404
    assert response.json() == {"error": "Asset not found"}


def test_update_needs_assets_edit(admin: Api, anon: Api, three: list[dict[str, Any]]) -> None:
    asset_id = three[0]["_id"]
    assert anon.post(f"/api/assets/{asset_id}", json={"data": {"title": "x"}}).status_code == 401
    reader = role_key(admin, "reader", {"assets/read": True, "assets/upload": True})
    response = reader.post(f"/api/assets/{asset_id}", json={"data": {"title": "x"}})
    assert response.status_code == 403
    assert "error" in response.json()
    assert admin.get(f"/api/assets/{asset_id}").json()["title"] == "charlie.png"


# -- delete ---------------------------------------------------------------------


def test_delete_removes_the_file_and_generated_images(admin: Api, anon: Api, quire: Quire,
                                                      three: list[dict[str, Any]]) -> None:
    asset = three[0]
    url = admin.get(f"/api/assets/image/{asset['_id']}", params={"w": 2, "h": 2, "mime": "png"})
    assert url.status_code == 200, url.text
    assert stored_keys(quire.assets.thumbs, asset["_id"])
    upload_file = asset["path"].lstrip("/")
    assert quire.assets.uploads.exists(upload_file)

    response = admin.delete(f"/api/assets/{asset['_id']}")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert not quire.assets.uploads.exists(upload_file)
    assert stored_keys(quire.assets.thumbs, asset["_id"]) == []
    if isinstance(quire.assets.thumbs, LocalFiles):  # the folder goes too
        assert not (quire.assets.thumbs.root / asset["_id"]).exists()
    assert admin.get(f"/api/assets/{asset['_id']}").status_code == 404
    assert anon.get(f"/storage/uploads{asset['path']}").status_code == 404
    assert ids(admin.get("/api/assets").json()) == ids(three[1:])
    # the other assets' files are untouched
    for other in three[1:]:
        assert quire.assets.uploads.exists(other["path"].lstrip("/"))


def test_delete_unknown_asset_is_404(admin: Api) -> None:
    response = admin.delete("/api/assets/0123456789abcdef01234567")
    assert response.status_code == 404
    assert response.json() == {"error": "Asset not found"}


def test_delete_twice_is_404_the_second_time(admin: Api, three: list[dict[str, Any]]) -> None:
    assert admin.delete(f"/api/assets/{three[0]['_id']}").status_code == 200
    again = admin.delete(f"/api/assets/{three[0]['_id']}")
    assert again.status_code == 404
    assert again.json() == {"error": "Asset not found"}


def test_delete_needs_assets_delete(admin: Api, anon: Api, quire: Quire, three: list[dict[str, Any]]) -> None:
    asset = three[0]
    assert anon.delete(f"/api/assets/{asset['_id']}").status_code == 401
    editor = role_key(admin, "editor", {"assets/read": True, "assets/edit": True, "assets/upload": True})
    response = editor.delete(f"/api/assets/{asset['_id']}")
    assert response.status_code == 403
    assert "error" in response.json()
    assert quire.assets.uploads.exists(asset["path"].lstrip("/"))
    assert admin.get(f"/api/assets/{asset['_id']}").status_code == 200


# -- folders --------------------------------------------------------------------


def test_create_folder(admin: Api) -> None:
    response = admin.post("/api/assets/folders", json={"data": {"name": "  Photos  "}})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["name"] == "Photos" and body["parent"] is None
    assert len(body["_id"]) == 24


def test_create_nested_folder_and_list(admin: Api) -> None:
    root = folder(admin, "Photos")
    child = folder(admin, "Holidays", root["_id"])
    other = folder(admin, "Archive")
    assert child["parent"] == root["_id"]
    listed = admin.get("/api/assets/folders")
    assert listed.status_code == 200
    assert [f["name"] for f in listed.json()] == ["Archive", "Holidays", "Photos"]
    children = admin.get("/api/assets/folders", params={"parent": root["_id"]})
    assert children.status_code == 200
    assert [f["_id"] for f in children.json()] == [child["_id"]]
    assert other["_id"] not in [f["_id"] for f in children.json()]


def test_list_folders_with_empty_parent_gives_the_top_level(admin: Api) -> None:
    root = folder(admin, "Photos")
    folder(admin, "Holidays", root["_id"])
    response = admin.get("/api/assets/folders?parent=")
    assert response.status_code == 200
    assert [f["_id"] for f in response.json()] == [root["_id"]]


@pytest.mark.parametrize(("data", "field"), [
    ({"name": ""}, "name"),
    ({"name": "   "}, "name"),
    ({"name": "a/b"}, "name"),
    ({"name": 5}, "name"),
    ({}, "name"),
    ({"name": "x", "parent": "0123456789abcdef01234567"}, "parent"),
])
def test_create_folder_with_invalid_data_is_400(admin: Api, data: dict[str, Any], field: str) -> None:
    response = admin.post("/api/assets/folders", json={"data": data})
    assert response.status_code == 400
    assert response.json()["fields"] == [field]
    assert admin.get("/api/assets/folders").json() == []


def test_create_folder_without_data_is_412(admin: Api) -> None:
    response = admin.post("/api/assets/folders", json={"name": "x"})
    assert response.status_code == 412
    assert response.json() == {"error": "Item data is missing"}


def test_rename_folder(admin: Api) -> None:
    root = folder(admin, "Photos")
    response = admin.post("/api/assets/folders", json={"data": {"_id": root["_id"], "name": "Pictures"}})
    assert response.status_code == 200
    assert response.json()["_id"] == root["_id"] and response.json()["name"] == "Pictures"
    assert [f["name"] for f in admin.get("/api/assets/folders").json()] == ["Pictures"]


def test_move_folder_under_another(admin: Api) -> None:
    a, b = folder(admin, "A"), folder(admin, "B")
    response = admin.post("/api/assets/folders", json={"data": {"_id": b["_id"], "name": "B", "parent": a["_id"]}})
    assert response.status_code == 200
    assert response.json()["parent"] == a["_id"]


def test_rename_unknown_folder_is_404(admin: Api) -> None:
    response = admin.post("/api/assets/folders", json={"data": {"_id": "0123456789abcdef01234567", "name": "x"}})
    assert response.status_code == 404
    assert "error" in response.json()


def test_move_folder_into_itself_is_400(admin: Api) -> None:
    a = folder(admin, "A")
    response = admin.post("/api/assets/folders", json={"data": {"_id": a["_id"], "name": "A", "parent": a["_id"]}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["parent"]
    assert admin.get("/api/assets/folders").json()[0]["parent"] is None


def test_move_folder_into_its_descendant_is_400(admin: Api) -> None:
    a = folder(admin, "A")
    b = folder(admin, "B", a["_id"])
    c = folder(admin, "C", b["_id"])
    response = admin.post("/api/assets/folders", json={"data": {"_id": a["_id"], "name": "A", "parent": c["_id"]}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["parent"]
    listed = {f["_id"]: f["parent"] for f in admin.get("/api/assets/folders").json()}
    assert listed == {a["_id"]: None, b["_id"]: a["_id"], c["_id"]: b["_id"]}


def test_delete_folder_moves_assets_to_root_and_deletes_subfolders(admin: Api) -> None:
    a = folder(admin, "A")
    b = folder(admin, "B", a["_id"])
    c = folder(admin, "C", b["_id"])
    keep = folder(admin, "Keep")
    in_a = upload_one(admin, "a.png", solid(3, 3, RED), folder=a["_id"])
    in_c = upload_one(admin, "c.png", solid(3, 3, GREEN), folder=c["_id"])
    in_keep = upload_one(admin, "k.png", solid(3, 3, BLUE), folder=keep["_id"])

    response = admin.delete(f"/api/assets/folders/{a['_id']}")
    assert response.status_code == 200
    assert response.json()["success"] is True
    assert response.json().get("moved") == 2
    assert [f["_id"] for f in admin.get("/api/assets/folders").json()] == [keep["_id"]]
    assert admin.get(f"/api/assets/{in_a['_id']}").json()["folder"] is None
    assert admin.get(f"/api/assets/{in_c['_id']}").json()["folder"] is None
    assert admin.get(f"/api/assets/{in_keep['_id']}").json()["folder"] == keep["_id"]
    assert b["_id"] not in [f["_id"] for f in admin.get("/api/assets/folders").json()]


def test_delete_unknown_folder_is_404(admin: Api) -> None:
    response = admin.delete("/api/assets/folders/0123456789abcdef01234567")
    assert response.status_code == 404
    assert "error" in response.json()


def test_folders_need_permissions(admin: Api, anon: Api) -> None:
    assert anon.get("/api/assets/folders").status_code == 401
    assert anon.post("/api/assets/folders", json={"data": {"name": "x"}}).status_code == 401
    reader = role_key(admin, "reader", {"assets/read": True})
    assert reader.get("/api/assets/folders").status_code == 200
    response = reader.post("/api/assets/folders", json={"data": {"name": "x"}})
    assert response.status_code == 403
    a = folder(admin, "A")
    assert reader.delete(f"/api/assets/folders/{a['_id']}").status_code == 403
    assert [f["_id"] for f in admin.get("/api/assets/folders").json()] == [a["_id"]]


def test_quire_assets_collection_matches_api(admin: Api, quire: Quire, three: list[dict[str, Any]]) -> None:
    assert quire.assets.assets.get(three[0]["_id"]) == three[0]
