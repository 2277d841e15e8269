"""`/mcp` in the OpenAPI document: the Model Context Protocol's Streamable
HTTP endpoint (JSON-RPC 2.0 messages; docs/ai.md)."""

from __future__ import annotations

from typing import Any

from quire.openapi import KEY_SECURITY, error_responses, op

MESSAGE: dict[str, Any] = {
    "type": "object", "required": ["jsonrpc"],
    "properties": {"jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer", "null"]},
                   "method": {"type": "string", "description": "initialize, tools/list, tools/call, "
                              "resources/read, prompts/get, ..."},
                   "params": {"type": "object"}},
}


def paths() -> dict[str, Any]:
    answer = {"description": "A JSON-RPC answer: a result, or an error (a tool's refusal is a result with "
                             "isError)", "content": {"application/json": {"schema": {"type": "object"}}}}
    # Quire's own refusals (no key, a foreign page) are {"error": "..."}; the
    # protocol's (a message that is no JSON-RPC) {"jsonrpc", "id", "error": {code, message}}
    errors = error_responses(400, 401, 403, 404, 406, 413, 415, 500)
    for refusal in errors.values():
        refusal["content"]["application/json"]["schema"] = {"type": "object", "required": ["error"]}
    post = {
        "summary": "The Model Context Protocol (Streamable HTTP, stateless, JSON answers) for AI assistants: "
                   "send `Accept: application/json, text/event-stream`",
        "tags": ["assistants"],
        "parameters": [],
        "requestBody": {"required": True, "content": {"application/json": {"schema": MESSAGE}}},
        "responses": {"200": answer, "202": {"description": "A notification, taken"}, **errors},
        "security": KEY_SECURITY,
    }
    prm = {"type": "object", "required": ["resource", "authorization_servers"], "properties": {
        "resource": {"type": "string"}, "authorization_servers": {"type": "array", "items": {"type": "string"}},
        "scopes_supported": {"type": "array"}, "bearer_methods_supported": {"type": "array"}}}
    metadata = op("The protected resource metadata of /mcp (RFC 9728): the sign-in provider whose access tokens "
                  "it takes; 404 without single sign-on", [], (404,), tag="assistants", security=False, schema=prm)
    return {"/mcp": {"post": post}, "/.well-known/oauth-protected-resource/mcp": {"get": metadata},
            "/.well-known/oauth-protected-resource": {"get": metadata}}
