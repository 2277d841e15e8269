"""Typed models outside GraphQL: the OpenAPI document's schema per model
(components, and read paths answering them) for the caller's role, and
`quire types --lang typescript`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.commands import run_quire as quire
from tests.conftest import Api, put_model


def test_the_openapi_document_has_a_schema_and_read_paths_per_readable_model(admin: Api, anon: Api) -> None:
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text", "label": "Name"}])
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text"}, {"name": "rating", "type": "number"}, {"name": "tags", "type": "tags"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}, {"name": "image", "type": "asset"},
        {"name": "seo", "type": "set", "opts": {"fields": [{"name": "title", "type": "text"}]}}])
    document = admin.get("/api/openapi.json").json()
    posts = document["components"]["schemas"]["Posts"]["properties"]
    assert posts["title"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert posts["rating"]["anyOf"][0] == {"type": "number"}
    assert posts["author"]["anyOf"][0] == {"anyOf": [{"$ref": "#/components/schemas/ContentLink"},
                                                     {"$ref": "#/components/schemas/Authors"}]}
    assert posts["image"]["anyOf"][0] == {"$ref": "#/components/schemas/AssetObject"}
    assert posts["seo"]["anyOf"][0]["properties"]["title"]["anyOf"][0] == {"type": "string"}
    assert posts["_id"]["type"] == "string"
    listed = document["paths"]["/api/content/items/posts"]["get"]
    assert listed["operationId"] == "list_posts"
    assert listed["responses"]["200"]["content"]["application/json"]["schema"]["anyOf"][0] == {
        "type": "array", "items": {"$ref": "#/components/schemas/Posts"}}
    assert {"filter", "sort", "limit"} <= {p["name"] for p in listed["parameters"]}
    assert "model" not in {p["name"] for p in listed["parameters"]}
    assert "/api/content/item/posts/{id}" in document["paths"]
    public = anon.get("/api/openapi.json").json()
    assert "Posts" not in public["components"]["schemas"] and "/api/content/items/posts" not in public["paths"]
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"},
                                                         {"name": "summary", "type": "longtext"}])
    again = admin.get("/api/openapi.json").json()["components"]["schemas"]["Posts"]["properties"]
    assert "summary" in again and "rating" not in again  # the document follows the model


def test_quire_types_writes_typescript(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    quire("demo", "--data", data)
    text = quire("types", "--lang", "typescript", "--data", data).stdout
    assert "export interface Posts {" in text and "export interface Authors {" in text
    assert "  _id: string;" in text
    assert "export interface Models {\n" in text and "  posts: Posts;" in text
    out = tmp_path / "models.ts"
    said = quire("types", "--lang", "typescript", "--out", str(out), "--data", data).stdout
    assert out.read_text() == text and "Wrote the types of" in said
    assert "usage: quire" in quire("types", "--help").stdout




def test_a_key_the_document_does_not_know_reads_the_public_roles_document(admin: Api, client: Any) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    answer = client.get("/api/openapi.json", headers={"api-key": "qk_not_a_key"})
    assert answer.status_code == 200 and "Posts" not in answer.json()["components"]["schemas"]
