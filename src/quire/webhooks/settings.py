"""The `[webhooks]` settings section, registered by the module itself (the
settings core knows no feature's sections beyond its own)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from quire.config import register_section
from quire.errors import ConfigError
from quire.sections import Section, setting

MIN_KEY_CHARS = 32


@dataclass(frozen=True)
class WebhooksSettings(Section):
    """Outbound webhooks (docs/webhooks.md): the key that encrypts their
    secrets, the HTTP timeout, the retry schedule, the delivery log's
    retention, automatic disabling, and which private addresses may be
    called."""

    NAME: ClassVar[str] = "webhooks"
    # empty: a key file made once in the data folder (every instance of a
    # cluster must then be given the same key here)
    key: str = setting("", secret=True)
    timeout_seconds: int = setting(10, between=(1, 120))
    max_attempts: int = setting(8, between=(1, 50))
    retry_ms: int = setting(60_000, between=(10, 86_400_000))
    keep_days: int = setting(30, between=(0, 36_500))
    disable_after: int = setting(20, between=(0, 1_000_000))
    allow_private: bool = False
    allow_hosts: tuple[str, ...] = ()

    def check(self) -> None:
        if self.key and len(self.key) < MIN_KEY_CHARS:
            raise ConfigError(f"setting 'webhooks.key' must be at least {MIN_KEY_CHARS} characters "
                              "(a random text, e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
        for host in self.allow_hosts:
            if not host or any(c.isspace() for c in host) or "/" in host:
                raise ConfigError(f"setting 'webhooks.allow_hosts' has {host!r}, which is no host name or address")


register_section(WebhooksSettings)
