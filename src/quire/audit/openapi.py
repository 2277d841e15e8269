"""OpenAPI paths of the audit log."""

from __future__ import annotations

from typing import Any

from quire.openapi import ID_PATTERN, READ_ERRORS, op, param

SECONDS = r"^[0-9]{1,12}(\.[0-9]{1,6})?$"
WHO = {"type": "object", "properties": {"kind": {"enum": ["key", "user", "hook", "system", "public"]},
                                         "id": {"type": ["string", "null"]}, "name": {"type": ["string", "null"]},
                                         "role": {"type": ["string", "null"]}}}
ENTRY = {"type": "object", "required": ["_id", "at", "who", "action", "resource", "id", "detail", "ip"],
         "properties": {"_id": {"type": "string"}, "at": {"type": "number", "description": "Unix seconds"},
                        "who": WHO, "action": {"type": "string", "description": "login, key.create, item.update, ..."},
                        "resource": {"type": "string", "description": "content/<model>, keys, roles, users, ..."},
                        "id": {"type": ["string", "null"], "description": "The document acted on"},
                        "detail": {"type": "object", "description": "Changed field names and the like; never a secret"},
                        "ip": {"type": ["string", "null"], "description": "The client address, when a request caused it"}}}
TEXT = " (exact; a trailing `*` matches every value starting with the rest)"


def paths() -> dict[str, Any]:
    return {
        "/api/audit": {"get": op(
            "Audit log entries, newest first (needs audit/read)",
            [param("action", "query", "string", "Only this action" + TEXT, maxLength=200),
             param("resource", "query", "string", "Only this resource" + TEXT, maxLength=200),
             param("who", "query", "string", "Only entries of this key, user or system id" + TEXT, maxLength=200),
             param("id", "query", "string", "Only entries about this document id" + TEXT, maxLength=200),
             param("from", "query", "string", "Only entries at or after this time (Unix seconds)", pattern=SECONDS),
             param("to", "query", "string", "Only entries at or before this time (Unix seconds)", pattern=SECONDS),
             param("limit", "query", "int", "At most this many (1-200, default 50)", maximum=200),
             param("skip", "query", "int", "Skip this many (at most 100,000)", maximum=100_000)],
            READ_ERRORS, tag="audit",
            schema={"type": "object", "properties": {"data": {"type": "array", "items": ENTRY},
                                                     "total": {"type": "integer"}}})},
        "/api/audit/{id}": {"get": op(
            "One audit log entry (needs audit/read)",
            [param("id", "path", "string", "Entry id (24 hex characters)", pattern=ID_PATTERN)],
            READ_ERRORS, tag="audit", schema=ENTRY)},
    }
