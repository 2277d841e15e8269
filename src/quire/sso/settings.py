"""The `[sso]` settings of quire.toml, with api.md's names and defaults.
An empty string stands for api.md's null (TOML has no null)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAPPED_FIELDS = ("email", "user", "name", "role")


@dataclass(frozen=True)
class SsoSettings:
    provider_url: str
    client_id: str
    client_secret: str
    issuer: str
    pkce_method: str | None
    scopes: str
    mapping: dict[str, str | None]
    allowed_roles: tuple[str, ...] | None
    default_role: str | None
    login_text: str
    redirect_uri: str
    timeout: int
    logout_token_max_age: int

    @property
    def configured(self) -> bool:
        return bool(self.provider_url and self.client_id)

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> SsoSettings:
        pkce = values["pkce"]
        method = ("S256" if pkce else None) if isinstance(pkce, bool) else (pkce or None)
        mapping = {f: (values["mapping"].get(f) or None) for f in MAPPED_FIELDS}
        return cls(
            provider_url=values["provider_url"].rstrip("/"),
            client_id=values["client_id"],
            client_secret=values["client_secret"],
            issuer=values["issuer"],
            pkce_method=method,
            scopes=values["scopes"],
            mapping={k: (v if isinstance(v, str) else None) for k, v in mapping.items()},
            allowed_roles=tuple(values["allowed_roles"]) or None,
            default_role=values["default_role"] or None,
            login_text=values["loginText"],
            redirect_uri=values["redirect_uri"],
            timeout=values["timeout_seconds"],
            logout_token_max_age=values["logout_token_max_age_seconds"],
        )
