"""Accounts in the studio: API keys, users and their sessions, and roles
with their permissions (`system/manage`). It builds no services: it shows
and changes those of `auth`, as the API's system routes do; it sits above
`content`, whose models make the rows of the roles' permission matrix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.accounts import roles, screens
from quire.modules import Module, NavEntry

HERE = Path(__file__).parent


def _manager(identity: Any) -> bool:
    return bool(identity.can("system/manage"))


module = Module("accounts", routes=[*screens.routes, *roles.routes], templates=HERE / "templates", nav=[
    NavEntry("Roles", "/studio/settings/roles", "Settings", _manager, order=84),
    NavEntry("API keys", "/admin/keys", "Settings", _manager, order=86),
    NavEntry("Users", "/admin/users", "Settings", _manager, order=88),
])
