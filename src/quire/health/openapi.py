"""OpenAPI path of the health check."""

from __future__ import annotations

from typing import Any

from quire.openapi import op


def paths() -> dict[str, Any]:
    return {
        "/api/system/healthcheck": {
            "get": op("Health check (no key needed)", [], (), tag="system", security=False, ok='{"status": "ok"}',
                          schema={"type": "object", "required": ["status"],
                                  "properties": {"status": {"const": "ok"}}}),
        },
    }
