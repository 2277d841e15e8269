"""The OpenAPI description of `/api/gql` (the schema itself is GraphQL's:
introspect it, or open the playground)."""

from __future__ import annotations

from typing import Any

from quire.openapi import op, param

REQUEST = {"type": "object", "required": ["query"], "properties": {
    "query": {"type": "string", "description": "The GraphQL document"},
    "variables": {"type": "object", "description": "Values of the document's variables"},
    "operationName": {"type": "string", "description": "Which operation of the document to run"},
    "extensions": {"type": "object", "description": "`persistedQuery`: {version: 1, sha256Hash}"}}}
RESPONSE = {"type": "object", "properties": {
    "data": {"type": "object", "nullable": True},
    "errors": {"type": "array", "items": {"type": "object", "properties": {
        "message": {"type": "string"}, "path": {"type": "array", "items": {}},
        "extensions": {"type": "object"}}}}}}


def paths() -> dict[str, Any]:
    query = [param("query", "query", "string", "The GraphQL document (queries only)"),
             param("variables", "query", "string", "The variables, as JSON"),
             param("operationName", "query", "string", "Which operation of the document to run"),
             param("extensions", "query", "string", "persistedQuery, as JSON")]
    return {"/api/gql": {
        "get": op("Run a GraphQL query (a persisted query by its hash too)", query, (400, 401, 413), tag="graphql",
                  schema=RESPONSE),
        "post": op("Run a GraphQL query or mutation", [], (400, 401, 413), body=REQUEST, tag="graphql",
                   schema=RESPONSE),
    }}
