"""The permission names a role can grant: `content/<model>/<action>` for
content, and the names each module declares (`Module.permissions`)."""

from __future__ import annotations

import re
from collections.abc import Collection

CONTENT_ACTIONS = ("read", "create", "update", "delete", "publish")
_CONTENT = re.compile(r"^content/([A-Za-z][A-Za-z0-9_]*|\*)/(read|create|update|delete|publish)$")
ROLE_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
BUILTIN_ROLES = ("admin", "public")


def is_known(permission: str, module_permissions: Collection[str]) -> bool:
    return permission in module_permissions or bool(_CONTENT.match(permission))


def content(model: str, action: str) -> str:
    return f"content/{model}/{action}"
