"""One model's items out and in: `GET /api/content/export/{model}` and
`POST /api/content/import/{model}` (CSV, JSON, NDJSON)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from tests.conftest import Api, create_item, put_model, role_key

FIELDS = [{"name": "title", "type": "text", "i18n": True, "required": True}, {"name": "n", "type": "number"},
          {"name": "tags", "type": "tags"}, {"name": "ok", "type": "boolean"},
          {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
          {"name": "seo", "type": "object"}]


@pytest.fixture
def site(admin: Api) -> Api:
    assert admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}]).status_code == 200
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", type="collection", fields=FIELDS)
    put_model(admin, "copy", type="collection", fields=FIELDS)
    return admin


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))


def test_csv_export_has_a_column_per_field_and_locale_and_is_formula_safe(site: Api) -> None:
    author = create_item(site, "authors", {"name": "Ada"})
    create_item(site, "posts", {"title": "=HYPERLINK(\"http://evil\")", "title_de": "Hallo", "n": 2.5,
                                "tags": ["a", "b"], "ok": True, "author": {"_id": author["_id"]},
                                "seo": {"k": "v"}})
    answer = site.get("/api/content/export/posts")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    assert answer.headers["content-disposition"] == 'attachment; filename="posts.csv"'
    (row,) = _rows(answer.text)
    assert list(row)[:6] == ["_id", "_state", "_created", "_modified", "title", "title_de"]
    assert row["title"] == "'=HYPERLINK(\"http://evil\")" and row["title_de"] == "Hallo"
    assert row["n"] == "2.5" and row["tags"] == '["a","b"]' and row["ok"] == "true"
    assert row["author"] == author["_id"] and json.loads(row["seo"]) == {"k": "v"}


def test_json_and_ndjson_export_follow_the_lists_parameters(site: Api) -> None:
    for n in range(5):
        create_item(site, "posts", {"title": f"t{n}", "n": n})
    as_json = site.get("/api/content/export/posts", params={"format": "json", "filter": '{"n": {"$gte": 3}}',
                                                            "sort": '{"n": -1}'})
    assert [i["n"] for i in as_json.json()] == [4, 3]
    lines = site.get("/api/content/export/posts", params={"format": "ndjson"}).text.strip().splitlines()
    assert len(lines) == 5 and json.loads(lines[0])["title"] == "t0"


def test_a_csv_export_imports_back_the_same(site: Api) -> None:
    author = create_item(site, "authors", {"name": "Ada"})
    for n in range(3):
        create_item(site, "posts", {"title": f"=t{n}", "title_de": f"d{n}", "n": n, "tags": ["x"], "ok": n % 2 == 0,
                                    "author": {"_id": author["_id"]}, "seo": {"n": n}})
    exported = site.get("/api/content/export/posts").content
    done = site.post("/api/content/import/copy", content=exported)
    assert done.status_code == 200, done.text
    assert done.json()["created"] == 3 and done.json()["problems"] == []
    strip = ("_rev", "_cby", "_mby", "_created", "_modified")  # this import's stamps, as an API write's
    ours = [{k: v for k, v in i.items() if k not in strip} for i in site.get("/api/content/items/copy").json()]
    theirs = [{k: v for k, v in i.items() if k not in strip} for i in site.get("/api/content/items/posts").json()]
    assert ours == theirs  # ids, states, every field and locale
    again = site.post("/api/content/import/copy", content=exported).json()
    assert again["updated"] == 3 and again["created"] == 0  # matched by id


def test_a_mapping_names_fields_and_leaves_columns_out(site: Api) -> None:
    body = b"Headline;Zahl;Notes\nFirst;1;x\nSecond;2;y\n"
    done = site.post("/api/content/import/copy", content=body,
                     params={"mapping": '{"Headline": "title", "Zahl": "n", "Notes": null}'})
    assert done.status_code == 200, done.text
    assert sorted((i["title"], i["n"]) for i in site.get("/api/content/items/copy").json()) == [("First", 1), ("Second", 2)]


def test_a_preview_stores_nothing_and_answers_the_first_rows(site: Api) -> None:
    body = b"title,n\n" + b"".join(f"row {i},{i}\n".encode() for i in range(50))
    done = site.post("/api/content/import/copy", content=body, params={"preview": "1"}).json()
    assert done["columns"] == ["title", "n"] and len(done["preview"]) == 20
    first = done["preview"][0]
    assert first["row"] == 2 and first["problems"] == []
    assert {k: v for k, v in first["item"].items() if k != "_id"} == {"title": "row 0", "n": 0}
    assert site.get("/api/content/items/copy").json() == []


def test_bad_rows_are_named_and_all_or_nothing_is_the_default(site: Api) -> None:
    unmapped = site.post("/api/content/import/copy", content=b"title,nope\nfine,x\n")
    assert unmapped.status_code == 400 and "Columns that are not fields of copy: nope" in unmapped.json()["error"]
    body = b"title,n,ok\nfine,1,true\n,2,false\nbad,ten,maybe\n"
    refused = site.post("/api/content/import/copy", content=body)
    assert refused.status_code == 400
    problems = {(p["row"], p["field"]) for p in refused.json()["problems"]}
    assert problems == {(3, "title"), (4, "n"), (4, "ok")}
    assert "nothing was stored" in refused.json()["error"]
    assert site.get("/api/content/items/copy").json() == []
    body = b"title,n,ok\nfine,1,true\n,2,false\nbad,ten,maybe\n"
    skipped = site.post("/api/content/import/copy", content=body, params={"mode": "skip"}).json()
    assert skipped["created"] == 1 and skipped["skipped"] == 2
    assert [i["title"] for i in site.get("/api/content/items/copy").json()] == ["fine"]


@pytest.mark.parametrize(("body", "params", "message"), [
    (b"title\nok\x00\n", {}, "line 2: the file holds a NUL byte"),
    (b"title\n\xff\xfe broken\n", {}, "line 2: the file is not UTF-8"),
    (b"title,n\na,1,extra\n", {}, "row 2 (line 2): 3 cells, the header names 2"),
    (b"title,title\na,b\n", {}, "line 1: the column title is named twice"),
    (b'title,n\nok,1\n"broken,2\nlast,3\n', {}, "a quote opened and never closed?"),
    (b"--xyz\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\na\r\n--xyz--", {},
     "send the file itself as the body"),
    (b"", {}, "The file is empty"),
    (b'{"title": "x"}', {"format": "json"}, "A JSON file holds a list of objects"),
    (b'{"title": "x"}\n[1]\n', {"format": "ndjson"}, "line 2: not a JSON object"),
    (b"title\nx\n", {"format": "xml"}, "format must be one of csv, json, ndjson"),
    (b"title\nx\n", {"mode": "some"}, "mode must be all"),
    (b"title\nx\n", {"mapping": "[1]"}, "mapping must be an object"),
])
def test_hostile_files_are_a_400_naming_the_problem(site: Api, body: bytes, params: dict[str, str],
                                                    message: str) -> None:
    answer = site.post("/api/content/import/copy", content=body, params=params)
    assert answer.status_code == 400 and message in answer.json()["error"], answer.text


def test_a_file_past_the_limit_is_a_413(site: Api, quire: Any) -> None:
    limit = quire.settings.content.import_max_bytes
    answer = site.post("/api/content/import/copy", content=b"title\n" + b"x" * limit)
    assert answer.status_code == 413


def test_imports_need_the_permissions_a_write_needs(site: Api) -> None:
    create_item(site, "copy", {"title": "there"})
    reader = role_key(site, "reader", {"content/copy/read": True})
    assert reader.post("/api/content/import/copy", content=b"title\nx\n").status_code == 403
    writer = role_key(site, "writer", {"content/copy/read": True, "content/copy/create": True})
    assert writer.post("/api/content/import/copy", content=b"title\nnew\n").status_code == 200
    refused = writer.post("/api/content/import/copy", content=b"title,_state\nx,0\n").json()
    assert refused["problems"][0]["error"] == "Permission denied"
    assert writer.get("/api/content/export/copy", params={"states": "all"}).status_code == 403


def test_progress_is_answered_for_a_key(site: Api) -> None:
    body = b"title\n" + b"".join(f"row {i}\n".encode() for i in range(1200))
    done = site.post("/api/content/import/copy", content=body, params={"progress": "job-1"})
    assert done.json()["created"] == 1200
    assert site.get("/api/content/import-progress/job-1").json() == {"done": 1200, "total": 1200}
    assert site.get("/api/content/import-progress/nope").status_code == 404


def test_progress_is_answered_to_whoever_imports_and_admins(site: Api) -> None:
    """A progress key is chosen by the client, so it can be guessed: the
    answer goes to the key that runs the import (and to admins) only."""
    rights = {"content/copy/read": True, "content/copy/create": True}
    writer, other = role_key(site, "writer", rights), role_key(site, "other", rights)
    assert writer.post("/api/content/import/copy", content=b"title\na\nb\n", params={"progress": "mine"}).json()[
        "created"] == 2
    assert writer.get("/api/content/import-progress/mine").json() == {"done": 2, "total": 2}
    assert site.get("/api/content/import-progress/mine").json() == {"done": 2, "total": 2}
    for stranger in (other, site.with_key(None)):
        refused = stranger.get("/api/content/import-progress/mine")
        assert refused.status_code in (401, 404) and "error" in refused.json()


def test_the_same_file_again_replaces_instead_of_doubling(site: Api) -> None:
    """A row without an _id gets one made from its content: a file imported
    again (after a stop half-way, or with other rows fixed) replaces what
    the first run stored. Equal rows are still items of their own."""
    body = b"title,n\nsame,1\nsame,1\nother,2\n"
    first = site.post("/api/content/import/copy", content=body).json()
    assert first["created"] == 3
    again = site.post("/api/content/import/copy", content=body + b"more,3\n").json()
    assert again["created"] == 1 and again["updated"] == 3
    assert sorted(i["title"] for i in site.get("/api/content/items/copy").json()) == ["more", "other", "same", "same"]


def test_what_new_users_tried(site: Api, admin_key: str) -> None:
    """Every state with states=all; a JSON or NDJSON export imports back; an
    export of some fields changes only those when imported back; an edited
    row takes this write's stamps; a text starting with ' comes back."""
    draft = create_item(site, "copy", {"title": "draft", "n": 1, "_state": 0})
    create_item(site, "copy", {"title": "'=kept as typed", "n": 2, "tags": ["t"]})
    listed = site.get("/api/content/export/copy", params={"format": "ndjson", "states": "all"}).text.splitlines()
    assert len(listed) == 2 and any(json.loads(line)["_id"] == draft["_id"] for line in listed)
    assert site.get("/api/content/export/copy", params={"locale": "de"}).json()["error"].endswith(
        "leave locale out")
    for fmt in ("json", "ndjson"):
        exported = site.get("/api/content/export/copy", params={"format": fmt, "states": "all"}).content
        done = site.post("/api/content/import/copy", content=exported)  # format guessed from the body
        assert done.status_code == 200 and done.json()["updated"] == 2, done.text
    only = site.get("/api/content/export/copy", params={"fields": '{"title": 1}', "states": "all"}).text
    assert _rows(only)[0].keys() == {"_id", "title"}
    edited = only.replace("draft", "draft edited")
    assert site.post("/api/content/import/copy", content=edited.encode()).json()["updated"] == 2
    stored = site.get(f"/api/content/item/copy/{draft['_id']}", params={"draft": "1"}).json()
    assert stored["title"] == "draft edited" and stored["n"] == 1  # the other fields kept
    assert stored["_modified"] >= draft["_modified"] and stored["_created"] == draft["_created"]
    round_trip = site.get("/api/content/export/copy").content
    site.post("/api/content/import/copy", content=round_trip)
    assert any(i["title"] == "'=kept as typed" for i in site.get("/api/content/items/copy").json())


def test_a_singleton_and_a_trees_parents(site: Api) -> None:
    put_model(site, "settings", type="singleton", fields=[{"name": "name", "type": "text"}])
    refused = site.post("/api/content/import/settings", content=b"name\nOne\n")
    assert refused.status_code == 400 and "is a singleton" in refused.json()["error"]
    put_model(site, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    body = b"_id,label,_pid\n" + b"aaaaaaaaaaaaaaaaaaaaaaaa,Home,\n" + b"bbbbbbbbbbbbbbbbbbbbbbbb,Sub,aaaaaaaaaaaaaaaaaaaaaaaa\n" \
        + b"cccccccccccccccccccccccc,Orphan,dddddddddddddddddddddddd\n"
    done = site.post("/api/content/import/nav", content=body, params={"mode": "skip"}).json()
    assert done["created"] == 2
    assert done["problems"] == [{"row": 4, "field": "_pid", "error": "is not an item of this model (nor of the file)"}]


def test_a_long_cell_and_rows_counted_as_a_spreadsheet_does(site: Api) -> None:
    long = "x" * 300_000
    body = f'title,n\n"{long}",1\n"two\nlines",2\n,3\n'.encode()
    done = site.post("/api/content/import/copy", content=body, params={"mode": "skip"}).json()
    assert done["created"] == 2
    assert done["problems"] == [{"row": 4, "field": "title", "error": "is required"}]


@pytest.mark.parametrize("cell", ["99999999999999999999999", "nan", "inf", "1e400"])
def test_numbers_no_store_holds_are_a_rows_problem(site: Api, cell: str) -> None:
    good = b"".join(f"ok {i},{i}\n".encode() for i in range(600))
    done = site.post("/api/content/import/copy", content=b"title,n\n" + good + f"bad,{cell}\n".encode())
    assert done.status_code == 400 and done.json()["problems"][0]["row"] == 602
    assert site.get("/api/content/items/copy").json() == []  # nothing stored


def test_deep_values_and_forged_stamps(site: Api) -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = {"a": deep}
    done = site.post("/api/content/import/copy", json=[{"title": "deep", "seo": deep}], params={"format": "json"})
    assert done.status_code == 400 and "the row" in done.json()["problems"][0]["error"]
    writer = role_key(site, "maker", {"content/copy/read": True, "content/copy/create": True})
    writer.post("/api/content/import/copy", content=b"title,_cby,_created\nnew,someone-else,1\n")
    (item,) = site.get("/api/content/items/copy").json()
    assert item["_cby"] != "someone-else" and item["_created"] > 1  # the write's own stamps


def test_import_needs_read_and_json_text_round_trips(site: Api) -> None:
    blind = role_key(site, "blind", {"content/copy/create": True, "content/copy/update": True})
    assert blind.post("/api/content/import/copy", content=b"title\nx\n", params={"preview": "1"}).status_code == 403
    put_model(site, "raw", type="collection", fields=[{"name": "title", "type": "text"}, {"name": "data", "type": "json"}])
    for value in ("hello", "123", ["a", {"b": 1}], "''=x", "line\u2028break"):
        create_item(site, "raw", {"title": "''=x" if value == "''=x" else "t", "data": value})
    for fmt in ("csv", "ndjson"):
        exported = site.get("/api/content/export/raw", params={"format": fmt}).content
        done = site.post("/api/content/import/raw", content=exported, params={"format": fmt})
        assert done.status_code == 200 and done.json()["updated"] == 5, done.text
    assert sorted(str(i["data"]) for i in site.get("/api/content/items/raw").json()) == sorted(
        str(v) for v in ("hello", "123", ["a", {"b": 1}], "''=x", "line\u2028break"))
    assert any(i["title"] == "''=x" for i in site.get("/api/content/items/raw").json())

