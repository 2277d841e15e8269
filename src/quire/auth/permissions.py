"""The permission names a role can grant."""

from __future__ import annotations

import re

CONTENT_ACTIONS = ("read", "create", "update", "delete", "publish")
MODULE_PERMISSIONS = {
    "assets/read", "assets/upload", "assets/edit", "assets/delete",
    "pages/read", "pages/manage",
    "l10n/read", "l10n/manage",
    "inbox/manage", "inbox/submissions",
    "searchmod/read", "searchmod/manage",
    "system/manage",
}
_CONTENT = re.compile(r"^content/([A-Za-z][A-Za-z0-9_]*|\*)/(read|create|update|delete|publish)$")
ROLE_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
BUILTIN_ROLES = ("admin", "public")


def is_known(permission: str) -> bool:
    return permission in MODULE_PERMISSIONS or bool(_CONTENT.match(permission))


def content(model: str, action: str) -> str:
    return f"content/{model}/{action}"
