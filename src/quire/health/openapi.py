"""OpenAPI path of the health check."""

from __future__ import annotations

from typing import Any

from quire.openapi import op, param


def paths() -> dict[str, Any]:
    checks = param("checks", "query", "string", "Comma-separated checks, as Cockpit's (default "
                   "`db, memory, fs, redis, smtp, custom`); `db` and `fs` are checked, the others "
                   "have nothing to check in Quire", maxLength=200)
    return {
        "/api/system/healthcheck": {
            "get": op("Health check (no key needed)", [checks], (400, 503), tag="system", security=False,
                      ok='{"status": "ok"}', schema={"type": "object", "required": ["status"],
                                                     "properties": {"status": {"const": "ok"}}}),
        },
    }
