"""Index definitions (`/api/searchmod/indexes`): create, change, read, list,
delete, rebuild, validation, permissions and the `quire search rebuild` CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from quire import cli
from quire.app import Quire
from quire.searchmod import service as search_service
from tests.commands import run_quire
from tests.conftest import Api, create_item, put_model, role_key
from tests.searchmod.helpers import (
    error_of,
    get_index,
    ids,
    posts_model,
    put_index,
    search,
    search_response,
    update,
)

# -- create, read, list -------------------------------------------------------


def test_put_creates_and_builds_an_index_and_get_describes_it(admin: Api) -> None:
    posts_model(admin)
    a = create_item(admin, "posts", {"title": "Apollo program"})
    create_item(admin, "posts", {"title": "Gemini program"})
    create_item(admin, "posts", {"title": "draft program", "_state": 0})
    made = put_index(admin, "missions", label="Missions", model="posts", fields=["title", "body"],
                     weights={"title": 3})
    assert made["name"] == "missions" and made["label"] == "Missions" and made["model"] == "posts"
    assert made["fields"] == ["title", "body"] and made["weights"] == {"title": 3}
    assert made["filter"] == {} and made["locales"] == []
    assert made["documents"] == 2  # the draft is not indexed
    assert isinstance(made["built_at"], int) and made["built_at"] > 0
    described = get_index(admin, "missions")
    assert described["documents"] == 2 and described["built_at"] == made["built_at"]
    assert {k: described[k] for k in ("label", "model", "fields", "weights")} == {
        "label": "Missions", "model": "posts", "fields": ["title", "body"], "weights": {"title": 3}}
    assert ids(search(admin, "missions", "apollo")) == [a["_id"]]


def test_label_defaults_to_the_name_and_locales_are_deduplicated(admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    posts_model(admin)
    made = put_index(admin, "ix", model="posts", fields=["title"], locales=["de", "de"])
    assert made["label"] == "ix"
    assert made["locales"] == ["de"]


def test_list_indexes_is_sorted_by_name_with_document_counts(admin: Api) -> None:
    posts_model(admin)
    put_model(admin, "pages", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "one"})
    create_item(admin, "posts", {"title": "two"})
    create_item(admin, "pages", {"title": "three"})
    put_index(admin, "zeta", model="posts", fields=["title"])
    put_index(admin, "alpha", model="pages", fields=["title"])
    put_index(admin, "mid", model="posts", fields=["title"], filter={"title": "one"})
    listed = admin.get("/api/searchmod/indexes").json()
    assert [(i["name"], i["documents"]) for i in listed] == [("alpha", 1), ("mid", 1), ("zeta", 2)]
    assert all(isinstance(i["built_at"], int) for i in listed)


def test_changing_an_index_keeps_created_and_rebuilds(admin: Api) -> None:
    posts_model(admin)
    create_item(admin, "posts", {"title": "red apple", "category": "fruit"})
    create_item(admin, "posts", {"title": "red car", "category": "cars"})
    first = put_index(admin, "ix", model="posts", fields=["title"])
    assert first["documents"] == 2
    second = put_index(admin, "ix", label="Fruit", model="posts", fields=["title"], filter={"category": "fruit"})
    assert second["_created"] == first["_created"] and second["_modified"] >= first["_modified"]
    assert second["label"] == "Fruit" and second["documents"] == 1
    assert search(admin, "ix", "red")["total"] == 1


def test_a_described_index_can_be_put_back_unchanged(admin: Api) -> None:
    posts_model(admin)
    create_item(admin, "posts", {"title": "round trip"})
    described = put_index(admin, "ix", model="posts", fields=["title", "slug"], weights={"slug": 2})
    response = admin.put("/api/searchmod/indexes/ix", json=described)
    assert response.status_code == 200, response.text
    again = response.json()
    assert again["fields"] == ["title", "slug"] and again["weights"] == {"slug": 2}
    assert again["documents"] == 1


def test_changing_fields_recreates_the_index_with_the_new_fields(admin: Api) -> None:
    posts_model(admin)
    item = create_item(admin, "posts", {"title": "Titleword", "slug": "slugword", "body": "<p>bodyword</p>"})
    put_index(admin, "ix", model="posts", fields=["title", "body"])
    assert search(admin, "ix", "bodyword")["total"] == 1
    assert search(admin, "ix", "slugword")["total"] == 0
    put_index(admin, "ix", model="posts", fields=["slug"])
    assert search(admin, "ix", "bodyword")["total"] == 0
    assert search(admin, "ix", "titleword")["total"] == 0
    found = search(admin, "ix", "slugword")
    assert found["hits"] == [{"_id": item["_id"], "_score": found["hits"][0]["_score"], "slug": "slugword"}]
    # reordering the fields is a change of columns as well: hits and weights follow the new order
    put_index(admin, "ix", model="posts", fields=["slug", "title"], weights={"title": 2})
    assert list(search(admin, "ix", "titleword")["hits"][0]) == ["_id", "_score", "slug", "title"]


def test_changing_locales_adds_and_drops_the_locale_documents(admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text", "i18n": True}])
    create_item(admin, "posts", {"title": "House", "title_de": "Haus"})
    put_index(admin, "ix", model="posts", fields=["title"])
    assert search(admin, "ix", "haus", locale="de")["total"] == 0  # de not indexed: default documents
    put_index(admin, "ix", model="posts", fields=["title"], locales=["de"])
    assert search(admin, "ix", "haus", locale="de")["hits"][0]["title"] == "Haus"
    assert get_index(admin, "ix")["documents"] == 1  # an item counts once, whatever its locales
    put_index(admin, "ix", model="posts", fields=["title"], locales=[])
    assert search(admin, "ix", "haus", locale="de")["total"] == 0
    assert search(admin, "ix", "house", locale="de")["hits"][0]["title"] == "House"


# -- validation ---------------------------------------------------------------


@pytest.fixture
def models(admin: Api) -> Api:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    posts_model(admin)
    put_model(admin, "settings", type="singleton", fields=[{"name": "title", "type": "text"}])
    return admin


BASE: dict[str, Any] = {"model": "posts", "fields": ["title", "body"]}


@pytest.mark.parametrize(("body", "field"), [
    ({"fields": ["title"]}, "model"),
    ({"model": "ghost", "fields": ["title"]}, "model"),
    ({"model": 5, "fields": ["title"]}, "model"),
    ({"model": "settings", "fields": ["title"]}, "model"),
    ({"model": "posts"}, "fields"),
    ({"model": "posts", "fields": []}, "fields"),
    ({"model": "posts", "fields": "title"}, "fields"),
    ({"model": "posts", "fields": [1]}, "fields"),
    ({"model": "posts", "fields": ["title", "ghost"]}, "fields"),
    ({"model": "posts", "fields": ["title", "title"]}, "fields"),
    ({**BASE, "filter": {"$where": "1"}}, "filter"),
    ({**BASE, "filter": {"title": {"$nope": 1}}}, "filter"),
    ({**BASE, "filter": "title"}, "filter"),
    ({**BASE, "filter": [{"title": "x"}]}, "filter"),
    ({**BASE, "locales": ["fr"]}, "locales"),
    ({**BASE, "locales": "de"}, "locales"),
    ({**BASE, "locales": ["default"]}, "locales"),
    ({**BASE, "weights": {"title": 0}}, "weights"),
    ({**BASE, "weights": {"title": -2}}, "weights"),
    ({**BASE, "weights": {"title": "3"}}, "weights"),
    ({**BASE, "weights": {"title": True}}, "weights"),
    ({**BASE, "weights": {"slug": 2}}, "weights"),
    ({**BASE, "weights": [3]}, "weights"),
    ({**BASE, "label": 7}, "label"),
    ({**BASE, "analyzer": "english"}, "analyzer"),
])
def test_invalid_definitions_are_400_naming_the_field(models: Api, body: dict[str, Any], field: str) -> None:
    response = models.put("/api/searchmod/indexes/ix", json=body)
    message = error_of(response, 400)
    assert response.json()["fields"] == [field], response.json()
    assert field in message
    assert error_of(models.get("/api/searchmod/indexes/ix"), 404) == "Index 'ix' not found"


def test_every_invalid_property_is_named_at_once(models: Api) -> None:
    response = models.put("/api/searchmod/indexes/ix", json={"model": "ghost", "fields": [],
                                                             "weights": {"title": 0}, "extra": 1})
    error_of(response, 400)
    assert response.json()["fields"] == ["extra", "fields", "model", "weights"]


@pytest.mark.parametrize("body", [None, [], "posts", 3])
def test_a_body_that_is_not_an_object_is_400(models: Api, body: Any) -> None:
    error_of(models.put("/api/searchmod/indexes/ix", json=body), 400)


def test_a_body_that_is_not_json_is_400(models: Api) -> None:
    response = models.put("/api/searchmod/indexes/ix", content=b"{model:", headers={"content-type": "application/json"})
    error_of(response, 400)


def test_an_invalid_change_leaves_the_index_as_it_was(models: Api) -> None:
    create_item(models, "posts", {"title": "kept"})
    put_index(models, "ix", **BASE)
    error_of(models.put("/api/searchmod/indexes/ix", json={"model": "posts", "fields": ["ghost"]}), 400)
    assert get_index(models, "ix")["fields"] == ["title", "body"]
    assert search(models, "ix", "kept")["total"] == 1


@pytest.mark.parametrize("name", ["a", "Posts_2", "my-index", "x" * 64])
def test_valid_index_names(models: Api, name: str) -> None:
    create_item(models, "posts", {"title": "named"})
    assert put_index(models, name, **BASE)["name"] == name
    assert search(models, name, "named")["total"] == 1
    assert get_index(models, name)["name"] == name


@pytest.mark.parametrize("name", ["1index", "_index", "-index", "x" * 65, "a.b", "a%20b", "%C3%A4rger"])
def test_invalid_index_names_are_400(models: Api, name: str) -> None:
    response = models.put(f"/api/searchmod/indexes/{name}", json=BASE)
    error_of(response, 400)
    assert response.json()["fields"] == ["name"]


# -- delete -------------------------------------------------------------------


def test_delete_removes_the_index_and_content_keeps_working(admin: Api) -> None:
    posts_model(admin)
    item = create_item(admin, "posts", {"title": "doomed words"})
    put_index(admin, "ix", model="posts", fields=["title"])
    put_index(admin, "other", model="posts", fields=["title"])
    assert admin.delete("/api/searchmod/indexes/ix").json() == {"success": True}
    assert error_of(admin.get("/api/searchmod/indexes/ix"), 404) == "Index 'ix' not found"
    assert error_of(search_response(admin, "ix", "doomed"), 404) == "Index 'ix' not found"
    assert [i["name"] for i in admin.get("/api/searchmod/indexes").json()] == ["other"]
    assert error_of(admin.delete("/api/searchmod/indexes/ix"), 404) == "Index 'ix' not found"
    # content writes go on, and the remaining index still follows them
    update(admin, "posts", item["_id"], {"title": "saved words"})
    assert search(admin, "other", "saved")["total"] == 1
    # a new index of the same name starts from the content, not from old documents
    fresh = put_index(admin, "ix", model="posts", fields=["title"])
    assert fresh["documents"] == 1
    assert search(admin, "ix", "doomed")["total"] == 0
    assert search(admin, "ix", "saved")["total"] == 1


def test_unknown_indexes_are_404_everywhere(admin: Api) -> None:
    for response in (admin.get("/api/searchmod/indexes/ghost"), admin.delete("/api/searchmod/indexes/ghost"),
                     admin.post("/api/searchmod/indexes/ghost/rebuild"),
                     search_response(admin, "ghost", "x")):
        assert error_of(response, 404) == "Index 'ghost' not found"


# -- rebuild ------------------------------------------------------------------


def _write_behind_the_index(quire: Quire, model: str, item_id: str, **changes: Any) -> None:
    """Change an item in the store without the content service (no events):
    the index does not know, until a rebuild."""
    coll = quire.content.collection(quire.models.get(model))
    item = coll.get(item_id)
    assert item is not None
    coll.replace({**item, **changes})


def test_rebuild_rereads_the_content_and_drops_items_that_left(admin: Api, quire: Quire) -> None:
    posts_model(admin)
    stays = create_item(admin, "posts", {"title": "stays here", "category": "news"})
    leaves = create_item(admin, "posts", {"title": "leaves filter", "category": "news"})
    hidden = create_item(admin, "posts", {"title": "gets unpublished", "category": "news"})
    put_index(admin, "ix", model="posts", fields=["title"], filter={"category": "news"})
    _write_behind_the_index(quire, "posts", stays["_id"], title="stays renamed")
    _write_behind_the_index(quire, "posts", leaves["_id"], category="blog")
    _write_behind_the_index(quire, "posts", hidden["_id"], _state=0)
    assert get_index(admin, "ix")["documents"] == 3  # stale until rebuilt
    response = admin.post("/api/searchmod/indexes/ix/rebuild")
    assert response.status_code == 200, response.text
    rebuilt = response.json()
    assert rebuilt["name"] == "ix" and rebuilt["documents"] == 1
    assert isinstance(rebuilt["built_at"], int)
    assert ids(search(admin, "ix", "renamed")) == [stays["_id"]]
    assert search(admin, "ix", "here")["total"] == 0
    assert search(admin, "ix", "leaves")["total"] == 0
    assert search(admin, "ix", "unpublished")["total"] == 0


def test_rebuild_in_several_chunks_writes_every_item(admin: Api, quire: Quire,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_service, "CHUNK", 3)
    posts_model(admin)
    made = [create_item(admin, "posts", {"title": f"chunked item{i}", "n": i}) for i in range(10)]
    assert put_index(admin, "ix", model="posts", fields=["title", "n"])["documents"] == 10
    _write_behind_the_index(quire, "posts", made[4]["_id"], _state=-1)
    _write_behind_the_index(quire, "posts", made[9]["_id"], title="renamed last")
    assert admin.post("/api/searchmod/indexes/ix/rebuild").json()["documents"] == 9
    result = search(admin, "ix", "chunked", limit=100)
    assert result["total"] == 8
    assert sorted(ids(result)) == sorted(m["_id"] for i, m in enumerate(made) if i not in (4, 9))
    assert ids(search(admin, "ix", "renamed")) == [made[9]["_id"]]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_quire(*args, check=False)


def test_cli_search_rebuild(admin: Api, quire: Quire, data_dir: Path) -> None:
    posts_model(admin)
    item = create_item(admin, "posts", {"title": "before rebuild"})
    create_item(admin, "posts", {"title": "another one"})
    put_index(admin, "ix", model="posts", fields=["title"])
    _write_behind_the_index(quire, "posts", item["_id"], title="after rebuild")
    assert search(admin, "ix", "after")["total"] == 0
    done = _cli("search", "rebuild", "ix", "--data", str(data_dir))
    assert done.returncode == 0, done.stderr
    assert "Rebuilt index ix: 2 documents" in done.stdout
    quire.store.refresh()
    assert ids(search(admin, "ix", "after")) == [item["_id"]]
    assert search(admin, "ix", "before")["total"] == 0


def test_cli_search_rebuild_of_an_unknown_index_fails_clearly(admin: Api, data_dir: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["search", "rebuild", "ghost", "--data", str(data_dir)]) == 1
    assert "Index 'ghost' not found" in capsys.readouterr().err


def test_cli_search_has_help() -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.build_parser().parse_args(["search", "rebuild", "--help"])
    assert exit_info.value.code == 0


# -- permissions --------------------------------------------------------------


def _management_calls(api: Api) -> list[Any]:
    return [
        api.get("/api/searchmod/indexes"),
        api.get("/api/searchmod/indexes/ix"),
        api.put("/api/searchmod/indexes/ix", json={"model": "posts", "fields": ["slug"]}),
        api.put("/api/searchmod/indexes/new", json={"model": "posts", "fields": ["slug"]}),
        api.put("/api/searchmod/indexes/bad", content=b"not json", headers={"content-type": "application/json"}),
        api.post("/api/searchmod/indexes/ix/rebuild"),
        api.delete("/api/searchmod/indexes/ix"),
    ]


@pytest.fixture
def indexed(admin: Api) -> Api:
    posts_model(admin)
    create_item(admin, "posts", {"title": "guarded"})
    put_index(admin, "ix", model="posts", fields=["title"])
    return admin


def _unchanged(admin: Api) -> None:
    assert [i["name"] for i in admin.get("/api/searchmod/indexes").json()] == ["ix"]
    assert get_index(admin, "ix")["fields"] == ["title"]


def test_managing_indexes_without_a_key_is_401(indexed: Api, anon: Api) -> None:
    for response in _management_calls(anon):
        assert error_of(response, 401)
    _unchanged(indexed)


def test_managing_indexes_with_only_searchmod_read_is_403(indexed: Api) -> None:
    reader = role_key(indexed, "searcher", {"searchmod/read": True, "content/posts/read": True})
    for response in _management_calls(reader):
        assert error_of(response, 403) == "Permission denied"
    _unchanged(indexed)


def test_searchmod_manage_is_enough_to_manage_indexes(indexed: Api) -> None:
    manager = role_key(indexed, "indexer", {"searchmod/manage": True})
    assert [i["name"] for i in manager.get("/api/searchmod/indexes").json()] == ["ix"]
    assert manager.get("/api/searchmod/indexes/ix").status_code == 200
    assert manager.put("/api/searchmod/indexes/ix", json={"model": "posts", "fields": ["slug"]}).status_code == 200
    assert manager.post("/api/searchmod/indexes/ix/rebuild").status_code == 200
    assert manager.delete("/api/searchmod/indexes/ix").json() == {"success": True}


def test_search_without_a_key_is_401_unless_the_public_role_may_read(indexed: Api, anon: Api) -> None:
    assert error_of(search_response(anon, "ix", "guarded"), 401)
    assert error_of(search_response(anon, "ghost", "guarded"), 401)  # no hint whether an index exists
    response = indexed.put("/api/system/roles/public", json={"permissions": {"searchmod/read": True}})
    assert response.status_code == 200, response.text
    assert search(anon, "ix", "guarded")["total"] == 1


@pytest.mark.parametrize("permissions", [
    {"searchmod/manage": True},
    {"content/posts/read": True, "content/*/read": True},
    {"searchmod/read": False},
])
def test_search_without_searchmod_read_is_403(indexed: Api, permissions: dict[str, bool]) -> None:
    other = role_key(indexed, "other", permissions)
    assert error_of(search_response(other, "ix", "guarded"), 403) == "Permission denied"


def test_search_with_searchmod_read_alone_works(indexed: Api) -> None:
    reader = role_key(indexed, "searcher", {"searchmod/read": True})
    assert search(reader, "ix", "guarded")["total"] == 1


# -- bugs found while testing -------------------------------------------------


@pytest.mark.parametrize("field", ["rank", "rowid"])
def test_fields_named_like_fts5_reserved_columns_can_be_indexed(admin: Api, field: str) -> None:
    put_model(admin, "m", type="collection", fields=[{"name": field, "type": "text"}])
    create_item(admin, "m", {field: "findme"})
    response = admin.put("/api/searchmod/indexes/ix", json={"model": "m", "fields": [field]})
    assert response.status_code == 200, response.text
    assert search(admin, "ix", "findme")["total"] == 1


def test_fields_differing_only_in_case_can_be_indexed(admin: Api) -> None:
    put_model(admin, "m", type="collection", fields=[{"name": "title", "type": "text"},
                                                     {"name": "Title", "type": "text"}])
    create_item(admin, "m", {"title": "lower", "Title": "upper"})
    response = admin.put("/api/searchmod/indexes/ix", json={"model": "m", "fields": ["title", "Title"]})
    assert response.status_code == 200, response.text
    assert search(admin, "ix", "upper")["total"] == 1


def test_index_names_differing_only_in_case_are_refused(admin: Api) -> None:
    put_model(admin, "a", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "a", {"title": "apple"})
    put_index(admin, "Fruit", model="a", fields=["title"])
    response = admin.put("/api/searchmod/indexes/fruit", json={"model": "a", "fields": ["title"]})
    assert response.status_code == 400 and response.json()["fields"] == ["name"], response.text
    assert search(admin, "Fruit", "apple")["total"] == 1
    response = admin.post("/api/content/item/a", json={"data": {"title": "apricot"}})
    assert response.status_code == 200, response.text
    assert search(admin, "Fruit", "apricot")["total"] == 1
