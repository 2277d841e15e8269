"""Typed schemas of the models, for the OpenAPI document and for
`quire types`: one JSON Schema (OpenAPI 3.1) per model, its properties
from the field types' own schemas (`FieldType.schema`, the registry), and
per model the read paths answering it, so OpenAPI generators
(openapi-typescript, openapi-generator) make typed clients."""

from __future__ import annotations

import copy
import re
from typing import Any

from quire.auth.service import Identity
from quire.content import types
from quire.content.models import Model

REF = "#/components/schemas/"
SYSTEM = {
    "_id": {"type": "string", "description": "The item's id (24 hexadecimal digits)"},
    "_state": {"type": "integer", "description": "1 published, 0 draft, -1 archived"},
    "_created": {"type": "integer", "description": "When it was made (Unix seconds)"},
    "_modified": {"type": "integer", "description": "When it was last changed (Unix seconds)"},
    "_rev": {"type": "integer", "description": "Its revision: send it back to refuse a stale save"},
    "_cby": {"type": ["string", "null"]}, "_mby": {"type": ["string", "null"]},
}
TREE = {"_pid": {"type": ["string", "null"], "description": "The parent item's id"},
        "_o": {"type": "integer", "description": "Its place among its siblings"}}
SHARED = {
    "ContentLink": {"type": "object", "description": "A link to an item, as stored (populate=N reads the item)",
                    "properties": {"_model": {"type": "string"}, "_id": {"type": "string"}},
                    "required": ["_model", "_id"]},
    "AssetObject": {"type": "object", "description": "An asset, as content answers carry it (docs/assets.md)",
                    "properties": {key: {"type": kind} for key, kind in (
                        ("_id", "string"), ("path", "string"), ("title", "string"), ("description", "string"),
                        ("altText", "string"), ("mime", "string"), ("type", "string"), ("size", "integer"),
                        ("width", ["integer", "null"]), ("height", ["integer", "null"]), ("thumbhash", "string"),
                        ("folder", ["string", "null"]))}},
}


def schema_name(model: str) -> str:
    """`blog_posts` → `BlogPosts` (a component's name)."""
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[_\-\s]+", model) if w) or "Model"


def field_schema(definition: dict[str, Any], readable: set[str]) -> dict[str, Any]:
    """A field's value as answers carry it."""
    kind = definition.get("type")
    out: dict[str, Any]
    if kind == "contentItemLink":
        target = (definition.get("opts") or {}).get("link")
        links: list[dict[str, Any]] = [{"$ref": REF + "ContentLink"}]
        if isinstance(target, str) and target in readable:
            links.append({"$ref": REF + schema_name(target)})
        out = {"anyOf": links}
    elif kind == "asset":
        out = {"$ref": REF + "AssetObject"}
    elif kind == "set":
        inner = [f for f in (definition.get("opts") or {}).get("fields") or [] if isinstance(f, dict)]
        out = {"type": "object", "properties": {f["name"]: field_schema(f, readable) for f in inner if f.get("name")}}
    else:
        record = types.get(kind) if isinstance(kind, str) else None
        out = dict(record.schema) if record is not None and record.schema else {}
    if definition.get("multiple") and kind not in ("tags",):
        out = {"type": "array", "items": out}
    label = definition.get("label")
    described = definition.get("info") or (label if label and label != definition.get("name") else None)
    nullable = {"anyOf": [out, {"type": "null"}]}
    return {**nullable, "description": described} if described else nullable


def model_schema(model: Model, readable: set[str]) -> dict[str, Any]:
    properties = dict(SYSTEM)
    if model.type == "tree":
        properties.update(TREE)
    for definition in model.fields:
        properties[definition["name"]] = field_schema(definition, readable)
    return {"type": "object", "title": model.label or model.name,
            "description": f"An item of {model.name} ({model.type})", "properties": properties,
            "required": ["_id"] if model.type != "singleton" else []}


def components(models: list[Model], identity: Identity) -> dict[str, Any]:
    """The schemas of the models `identity` may read, and what they use."""
    readable = {m.name for m in models if identity.can(f"content/{m.name}/read")}
    out = dict(SHARED)
    for model in models:
        if model.name in readable:
            out[schema_name(model.name)] = model_schema(model, readable)
    return out


def paths(models: list[Model], identity: Identity, generic: dict[str, Any]) -> dict[str, Any]:
    """Per readable model, its read paths answering its schema: the
    generic operation (`generic`: the document's paths) with the model
    filled in, so every parameter and answer stays documented once."""
    out: dict[str, Any] = {}
    for model in models:
        if not identity.can(f"content/{model.name}/read"):
            continue
        ref: dict[str, Any] = {"$ref": REF + schema_name(model.name)}
        reads: list[tuple[str, str, dict[str, Any], str]] = [("/api/content/item/{model}", f"/api/content/item/{model.name}", ref, "get")]
        if model.type != "singleton":
            listed = {"type": "array", "items": ref}
            page = {"anyOf": [listed, {"type": "object", "properties": {"data": listed, "meta": {"type": "object"}}}]}
            reads = [("/api/content/items/{model}", f"/api/content/items/{model.name}", page, "list"),
                     ("/api/content/item/{model}/{id}", f"/api/content/item/{model.name}/{{id}}", ref, "get")]
        for template, path, answer, verb in reads:
            operation = copy.deepcopy(generic[template]["get"])
            operation["parameters"] = [p for p in operation.get("parameters", []) if p.get("name") != "model"]
            operation["summary"] = f"{operation.get('summary', '')} ({model.name})"
            operation["tags"] = [f"model: {model.name}"]
            operation["operationId"] = f"{verb}_{model.name}"
            for media in operation["responses"]["200"].get("content", {}).values():
                media["schema"] = answer
            out[path] = {"get": operation}
    return out
