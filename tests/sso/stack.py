"""A real OpenID provider (tests/oidc) and a real Quire server configured
for it, for the single sign-on tests over HTTP and in the browser."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.commands import run_quire
from tests.ports import free_port
from tests.serving import quire_server
from tests.sso.provider import Provider, start_provider

CLIENT_ID = "quire-admin"
CLIENT_SECRET = "test-client-secret"
ROLES = {"editor": {"content/*/read": True}, "viewer": {"content/*/read": True}}
ACCOUNTS: dict[str, dict[str, Any]] = {
    "ann": {"email": "ann@example.com", "preferred_username": "ann", "name": "Ann Example",
            "groups": ["editor"], "realm_access": {"roles": ["admin", "offline_access"]}},
    "bob": {"email": "bob@example.com", "preferred_username": "bob", "name": "Bob",
            "groups": ["nosuchrole"], "realm_access": {"roles": ["viewer"]}},
    "eve": {"email": "not-an-email", "preferred_username": "eve", "groups": ["editor"]},
}


@dataclass
class Stack:
    app: str  # Quire's base URL
    key: str  # an admin API key
    op: Provider
    data: Path
    log: Path

    def server_log(self) -> str:
        return self.log.read_text(errors="replace")


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


@contextlib.contextmanager
def sso_stack(tmp_path: Path, sso: dict[str, Any] | None = None,
              accounts: dict[str, dict[str, Any]] | None = None,
              client: dict[str, Any] | None = None) -> Iterator[Stack]:
    """Provider and server; `sso` adds or overrides `[sso]` settings (the
    default maps the role from `realm_access/roles/0`)."""
    port = free_port()
    app = f"http://127.0.0.1:{port}"
    registered = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                  "redirect_uris": [f"{app}/sso/callback"],
                  "post_logout_redirect_uris": [f"{app}/auth/login"],
                  "backchannel_logout_uri": f"{app}/sso/logout",
                  "backchannel_logout_session_required": True, **(client or {})}
    with start_provider(tmp_path, [registered], accounts if accounts is not None else ACCOUNTS) as op:
        data = tmp_path / "data"
        run_quire("init", "--data", str(data))
        settings = {"provider_url": op.issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                    "mapping": {"role": "realm_access/roles/0"}, **(sso or {})}
        lines = ["[sso]"] + [f"{k} = {_toml(v)}" for k, v in settings.items()]
        (data / "quire.toml").write_text("\n".join(lines) + "\n")
        _roles(data)
        with quire_server(data, port=port) as (base, key, log):
            yield Stack(base, key, op, data, log)


def _roles(data: Path) -> None:
    """The roles the test accounts' claims name (admin is built in)."""
    from quire.app import Quire
    from quire.config import load_settings

    quire = Quire(load_settings(data, env={}))
    try:
        for name, permissions in ROLES.items():
            quire.auth.save_role(name, {"permissions": permissions})
    finally:
        quire.close()
