"""The `[sso]` settings of quire.toml, with api.md's names and defaults.
An empty string stands for api.md's null (TOML has no null); the
properties below read the settings that way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from quire.errors import ConfigError
from quire.sections import Section, setting

MAPPED_FIELDS = ("email", "user", "name", "role")


@dataclass(frozen=True)
class SsoSettings(Section):
    NAME: ClassVar[str] = "sso"
    provider_url: str = ""
    client_id: str = ""
    client_secret: str = setting("", secret=True)
    issuer: str = ""
    pkce: bool | str = setting(True, describe="true, false or a method name like \"S256\"")
    scopes: str = "openid profile email"
    mapping: dict[str, str | bool] = setting(
        {"email": "email", "user": "preferred_username", "name": "name", "role": "groups"},
        describe="a table of field = \"claim/path\" (or \"\" for none)",
    )
    allowed_roles: tuple[str, ...] = ()  # empty: every role
    default_role: str = ""
    login_text: str = setting("Login via OAuth", key="loginText")  # api.md's name
    redirect_uri: str = ""
    timeout_seconds: int = setting(10, between=(1, 300))
    logout_token_max_age_seconds: int = setting(300, between=(10, 86_400))

    def check(self) -> None:
        unknown = sorted(set(self.mapping) - set(MAPPED_FIELDS))
        if unknown:
            raise ConfigError(f"setting 'sso.mapping' has unknown fields: {', '.join(unknown)} "
                              "(known: email, user, name, role)")
        for key in ("provider_url", "issuer", "redirect_uri"):
            url = getattr(self, key)
            if url and not url.startswith(("http://", "https://")):
                raise ConfigError(f"setting 'sso.{key}' must start with http:// or https://")

    @property
    def configured(self) -> bool:
        return bool(self.provider_url and self.client_id)

    @property
    def provider_base(self) -> str:
        """`provider_url` without a trailing slash, to append paths to."""
        return self.provider_url.rstrip("/")

    @property
    def pkce_method(self) -> str | None:
        """The PKCE method to use; None for no PKCE."""
        if isinstance(self.pkce, bool):
            return "S256" if self.pkce else None
        return self.pkce or None

    @property
    def claim_paths(self) -> dict[str, str | None]:
        """The claim path of each user field; None reads nothing (`""` or
        `false` in the file)."""
        return {f: (path if isinstance(path, str) and path else None)
                for f in MAPPED_FIELDS for path in [self.mapping.get(f)]}
