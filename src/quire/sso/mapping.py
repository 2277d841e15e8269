"""Claims to user fields: slash paths into the claims (numeric segments
index lists), then api.md's validation rules."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from quire.auth.permissions import ROLE_NAME
from quire.auth.users import strip_name, valid_user_name
from quire.emails import normal_email
from quire.sso.settings import SsoSettings

_INDEX = re.compile(r"[0-9]{1,6}")


class MappingError(Exception):
    """A login refused for its claims; the message is api.md's."""


def claim_at(claims: Any, path: str) -> Any:
    """The value at `realm_access/roles/0`-style paths, else None."""
    node = claims
    for part in path.strip("/").split("/"):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and _INDEX.fullmatch(part) and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
        if node is None:
            return None
    return node


def map_user(claims: dict[str, Any], settings: SsoSettings, role_exists: Callable[[str], bool]) -> dict[str, Any]:
    """The user fields of these claims, validated; MappingError otherwise."""
    mapping = settings.claim_paths

    def read(field: str) -> Any:
        path = mapping.get(field)
        return None if path is None else claim_at(claims, path)

    email = read("email")
    if normal_email(email) is None:
        raise MappingError("Invalid email format")
    user = read("user")
    if user is None or user == "":
        user = email  # no user name claim: the e-mail address is the login name
    if not isinstance(user, str | int) or not valid_user_name(str(user)):
        raise MappingError("Invalid user name")
    name = read("name")
    fields: dict[str, Any] = {
        "email": email,
        "user": str(user).strip(),
        "name": strip_name(name if isinstance(name, str) else "") or str(user).strip(),
        "role": choose_role(read("role"), settings, role_exists),
    }
    return fields


def choose_role(value: Any, settings: SsoSettings, role_exists: Callable[[str], bool]) -> str:
    """The role of a claim value: a string, or the first usable string of a
    list; else `default_role` when set; else the reason it failed."""
    candidates = [v for v in value if isinstance(v, str)] if isinstance(value, list) else (
        [value] if isinstance(value, str) else [])
    failure = None
    for role in candidates:
        problem = role_problem(role, settings, role_exists)
        if problem is None:
            return role
        failure = failure or problem
    if settings.default_role:  # "" is null: none
        if not role_exists(settings.default_role):  # a setting naming a role that was deleted
            raise MappingError("Role does not exist")
        return settings.default_role
    raise MappingError(failure or "Role does not exist")


def role_problem(role: str, settings: SsoSettings, role_exists: Callable[[str], bool]) -> str | None:
    if not ROLE_NAME.match(role) or not role_exists(role):
        return "Role does not exist"
    if settings.allowed_roles and role not in settings.allowed_roles:  # empty allows all
        return "Role not allowed by configuration"
    return None
