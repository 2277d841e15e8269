"""The models' TypeScript types (`quire types --lang typescript`), made
from the same JSON Schemas as the OpenAPI document's components
(content/schemas.py): one interface per model, the shared ones they use
(`ContentLink`, `AssetObject`), and a map from model names to them."""

from __future__ import annotations

import json
import re
from typing import Any

from quire.content.schemas import REF, schema_name

NAME = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
SCALARS = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}


def ts_type(schema: dict[str, Any], indent: str = "") -> str:
    """The TypeScript of a JSON Schema, for the subset Quire's field types use."""
    if "$ref" in schema:
        return str(schema["$ref"]).removeprefix(REF)
    if "anyOf" in schema:
        parts = []
        for option in schema["anyOf"]:
            text = ts_type(option, indent)
            if text not in parts:
                parts.append(text)
        return " | ".join(parts)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(ts_type({**schema, "type": k}, indent) for k in kind)
    if kind == "array":
        inner = ts_type(schema.get("items") or {}, indent)
        return f"Array<{inner}>"
    if kind == "object":
        properties = schema.get("properties")
        if not properties:
            return "Record<string, unknown>"
        return object_type(properties, schema.get("required") or [], indent)
    return SCALARS.get(kind, "unknown") if isinstance(kind, str) else "unknown"


def object_type(properties: dict[str, Any], required: list[str], indent: str) -> str:
    inner = indent + "  "
    lines = ["{"]
    for name, schema in properties.items():
        key = name if NAME.match(name) else json.dumps(name)
        optional = "" if name in required else "?"
        described = schema.get("description")
        if described:
            lines.append(f"{inner}/** {str(described).replace('*/', '* /')} */")
        lines.append(f"{inner}{key}{optional}: {ts_type(schema, inner)};")
    lines.append(indent + "}")
    return "\n".join(lines)


def typescript(components: dict[str, Any], models: list[str]) -> str:
    out = ["// The content models' types, written by `quire types --lang typescript`.",
           "// Made again after a model changes; do not edit.", ""]
    for name, schema in components.items():
        title = schema.get("description")
        if title:
            out.append(f"/** {title} */")
        out.append(f"export interface {name} {object_type(schema.get('properties') or {}, schema.get('required') or [], '')}")
        out.append("")
    out.append("/** Each model's item type, by the model's name. */")
    out.append("export interface Models {")
    for model in models:
        key = model if NAME.match(model) else json.dumps(model)
        out.append(f"  {key}: {schema_name(model)};")
    out.append("}")
    return "\n".join(out) + "\n"
