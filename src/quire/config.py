"""Settings: built-in defaults < `<data>/quire.toml` (or --config) < QUIRE_* env.

Every setting lives in a section; the environment variable of
`[server] port` is QUIRE_SERVER_PORT. Settings are validated once at start
and a bad one stops the service with a message that names its key.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parseaddr
from pathlib import Path
from typing import Any

from quire.errors import ConfigError
from quire.forwarded import MAX_PROXY_HOPS

log = logging.getLogger("quire.config")

# The CORS defaults; kept here, not in asgi.py, so settings import no web code.
CORS_HEADERS = [
    "accept", "accept-language", "api-key", "authorization", "cache-control", "content-language",
    "content-type", "if-match", "if-modified-since", "if-none-match", "pragma", "x-persona-audience",
    "x-persona-tz-offset", "x-persona-vars", "x-requested-with",
]
CORS_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
_TOKEN = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")  # an HTTP header or method name

# section -> key -> default. The default's type is the setting's type.
DEFAULTS: dict[str, dict[str, Any]] = {
    "server": {
        "host": "127.0.0.1",
        "port": 8080,
        "workers": 1,
        "quiet": False,
        "public_url": "",
        "proxy_hops": 0,
    },
    "api": {
        "max_body_bytes": 10 * 1024 * 1024,
        "max_json_depth": 64,
        "cors_origins": ["*"],
        "cors_headers": list(CORS_HEADERS),
        "cors_methods": list(CORS_METHODS),
        "max_populate_depth": 5,
    },
    "store": {
        "lock_timeout_ms": 5000,
        "import_batch_items": 2000,
    },
    "content": {
        "default_locale_name": "Default",
    },
    "assets": {
        "max_upload_bytes": 64 * 1024 * 1024,
        "max_request_bytes": 256 * 1024 * 1024,
        "max_output_size": 4096,
        "max_pixels": 100_000_000,
        "decode_pixels": 24_000_000,
        "max_concurrent_renders": 2,
        "render_wait_seconds": 5,
        "renders_per_hour": 100,
        "thumbs_max_bytes": 1024 * 1024 * 1024,
        "presets": {},
        "default_quality": 80,
        "allowed_types": ["image/*", "video/*", "audio/*", "application/pdf", "text/plain",
                          "text/csv", "text/markdown", "application/json", "application/zip",
                          "application/gzip", "application/x-tar", "application/x-7z-compressed",
                          "application/msword", "application/vnd.openxmlformats-officedocument.*",
                          "application/vnd.ms-excel", "application/vnd.ms-powerpoint",
                          "application/vnd.oasis.opendocument.*", "application/rtf", "application/xml",
                          "font/*"],
        "refused_types": [],
    },
    "pages": {
        "site_url": "",
        "default_language": "en",
        "locale_prefix": True,
        "max_sitemap_urls": 50_000,
    },
    "inbox": {
        "max_file_bytes": 10 * 1024 * 1024,
        "max_request_bytes": 32 * 1024 * 1024,
        "max_files": 10,
        "max_fields": 50,
        "max_field_length": 10_000,
        "rate_limit": 10,
        "rate_window_seconds": 60,
        "trust_forwarded_for": False,
    },
    "smtp": {
        "host": "",
        "port": 587,
        "user": "",
        "password": "",
        "starttls": True,
        "ssl": False,
        "from": "quire@localhost",
        "timeout_seconds": 10,
        "max_attempts": 6,
        "retry_seconds": 30,
        "max_attachment_bytes": 10 * 1024 * 1024,
    },
    "hooks": {
        "modules": [],
    },
    "admin": {
        "session_idle_seconds": 2 * 3600,
        "session_max_seconds": 12 * 3600,
        "secure_cookies": "auto",
        "login_attempts": 5,
        "login_window_seconds": 300,
    },
    # api.md's table: "" stands for null (TOML has no null).
    "sso": {
        "provider_url": "",
        "client_id": "",
        "client_secret": "",
        "issuer": "",
        "pkce": True,
        "scopes": "openid profile email",
        "mapping": {"email": "email", "user": "preferred_username", "name": "name", "role": "groups"},
        "allowed_roles": [],
        "default_role": "",
        "loginText": "Login via OAuth",
        "redirect_uri": "",
        "timeout_seconds": 10,
        "logout_token_max_age_seconds": 300,
    },
}

# Settings whose value may take more than one type: (section, key) -> check, description.
FLEXIBLE: dict[tuple[str, str], tuple[Any, str]] = {
    ("sso", "pkce"): (lambda v: isinstance(v, bool | str), "true, false or a method name like \"S256\""),
    ("assets", "presets"): (
        lambda v: isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()),
        "a table of name = {w = ..., h = ..., m = \"...\", q = ..., mime = \"...\"}",
    ),
    ("sso", "mapping"): (
        lambda v: isinstance(v, dict) and all(isinstance(x, str | bool) for x in v.values()),
        "a table of field = \"claim/path\" (or \"\" for none)",
    ),
}

ENV_PREFIX = "QUIRE_"

# Rules a feature module keeps for its own settings (the assets module's
# image presets), added when the module is imported (`add_check`) and run
# by `load_settings` after the types are checked: config imports no module.
SECTION_CHECKS: dict[str, Callable[[dict[str, dict[str, Any]]], None]] = {}


def add_check(name: str, check: Callable[[dict[str, dict[str, Any]]], None]) -> None:
    """Run `check(values)` on every load; it raises ConfigError naming the
    setting. Added again under the same name, it replaces the earlier one."""
    SECTION_CHECKS[name] = check


@dataclass
class Settings:
    data_dir: Path
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Deprecated settings that were used, one line each: `quire serve` logs
    # them once at start (see log_deprecations).
    deprecations: list[str] = field(default_factory=list)

    def get(self, section: str, key: str) -> Any:
        return self.values[section][key]

    @property
    def db_path(self) -> Path:
        return self.data_dir / "quire.db"


def load_settings(
    data_dir: str | Path,
    config_file: str | Path | None = None,
    env: dict[str, str] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
) -> Settings:
    """Merge defaults, the TOML file and the environment; validate."""
    data = Path(data_dir)
    values = {section: dict(keys) for section, keys in DEFAULTS.items()}
    path = Path(config_file) if config_file else data / "quire.toml"
    if config_file and not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    parsed: dict[str, Any] = {}
    if path.exists():
        try:
            parsed = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
        _merge(values, parsed, str(path))
    environ = os.environ if env is None else env
    _merge_env(values, environ)
    for section, keys in (overrides or {}).items():
        for key, value in keys.items():
            _set(values, section, key, value, "override")

    def given(section: str, key: str) -> bool:
        return any(key in (source.get(section) or {}) for source in (parsed, overrides or {})) \
            or f"{ENV_PREFIX}{section}_{key}".upper() in environ

    deprecations = _trust_forwarded_for(values, given("inbox", "trust_forwarded_for"),
                                        given("server", "proxy_hops"))
    _validate(values)
    return Settings(data, values, deprecations)


def _trust_forwarded_for(values: dict[str, dict[str, Any]], used: bool, hops_given: bool) -> list[str]:
    """`[inbox] trust_forwarded_for = true` is read as `[server] proxy_hops = 1`
    unless proxy_hops is set too; either way its use is reported."""
    if not used:
        return []
    if not values["inbox"]["trust_forwarded_for"]:
        return ["setting 'inbox.trust_forwarded_for' is deprecated and has no effect when false; remove it"]
    if hops_given:
        return ["setting 'inbox.trust_forwarded_for' is deprecated and ignored: "
                f"'server.proxy_hops' = {values['server']['proxy_hops']} is set; remove it"]
    values["server"]["proxy_hops"] = 1
    return ["setting 'inbox.trust_forwarded_for' is deprecated: read as 'server.proxy_hops' = 1 "
            "(the address the one trusted proxy appended to X-Forwarded-For); set that instead"]


def log_deprecations(settings: Settings) -> None:
    """One warning line per deprecated setting in use (a log line, not a
    Python warning: the server must start clean under `-W error`)."""
    for message in settings.deprecations:
        log.warning("%s", message)


def _merge(values: dict[str, dict[str, Any]], parsed: dict[str, Any], origin: str) -> None:
    for section, keys in parsed.items():
        if section not in DEFAULTS:
            raise ConfigError(f"{origin}: unknown section [{section}]")
        if not isinstance(keys, dict):
            raise ConfigError(f"{origin}: '{section}' must be a table")
        for key, value in keys.items():
            _set(values, section, key, value, origin)


def _merge_env(values: dict[str, dict[str, Any]], env: Any) -> None:
    for section, keys in DEFAULTS.items():
        for key in keys:
            name = f"{ENV_PREFIX}{section}_{key}".upper()
            if name in env:
                _set(values, section, key, _from_env(env[name], DEFAULTS[section][key], name), name)


def _from_env(raw: str, default: Any, name: str) -> Any:
    if isinstance(default, dict):  # a table: JSON in the variable
        try:
            return json.loads(raw)
        except ValueError:
            raise ConfigError(f"{name} must be a JSON object") from None
    if name == "QUIRE_SSO_PKCE" and raw.lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off", ""):
        return raw  # a method name
    if isinstance(default, bool):
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off", ""):
            return False
        raise ConfigError(f"{name} must be true or false")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{name} must be an integer") from None
    if isinstance(default, list):
        return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


def _set(values: dict[str, dict[str, Any]], section: str, key: str, value: Any, origin: str) -> None:
    if key not in DEFAULTS[section]:
        raise ConfigError(f"{origin}: unknown setting '{section}.{key}'")
    default = DEFAULTS[section][key]
    flexible = FLEXIBLE.get((section, key))
    if flexible is not None:
        if not flexible[0](value):
            raise ConfigError(f"{origin}: setting '{section}.{key}' must be {flexible[1]}")
        values[section][key] = {**default, **value} if isinstance(default, dict) else value
        return
    kind = type(default)
    ok = isinstance(value, kind) and (kind is not int or not isinstance(value, bool))
    if isinstance(default, list):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if not ok:
        raise ConfigError(f"{origin}: setting '{section}.{key}' must be {_kind_name(default)}")
    values[section][key] = value


def _kind_name(default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, list):
        return "a list of strings"
    return "a string"


def _validate(values: dict[str, dict[str, Any]]) -> None:
    url = values["server"]["public_url"]
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError("setting 'server.public_url' must start with http:// or https://")
    site = values["pages"]["site_url"]
    if site and not site.startswith(("http://", "https://")):
        raise ConfigError("setting 'pages.site_url' must start with http:// or https://")
    checks = [
        ("server", "port", 1, 65535),
        ("server", "workers", 1, 64),
        ("server", "proxy_hops", 0, MAX_PROXY_HOPS),
        ("api", "max_body_bytes", 1024, 2**40),
        ("api", "max_json_depth", 2, 10000),
        ("api", "max_populate_depth", 0, 5),
        ("pages", "max_sitemap_urls", 1, 1_000_000),
        ("store", "lock_timeout_ms", 0, 600_000),
        ("store", "import_batch_items", 1, 1_000_000),
        ("inbox", "max_file_bytes", 1, 2**40),
        ("inbox", "max_request_bytes", 1024, 2**42),
        ("inbox", "max_files", 0, 1000),
        ("inbox", "max_fields", 1, 10_000),
        ("inbox", "max_field_length", 1, 10_000_000),
        ("inbox", "rate_limit", 0, 1_000_000),
        ("inbox", "rate_window_seconds", 1, 86_400),
        ("smtp", "port", 1, 65535),
        ("smtp", "timeout_seconds", 1, 600),
        ("smtp", "max_attempts", 1, 100),
        ("smtp", "retry_seconds", 1, 86_400),
        ("smtp", "max_attachment_bytes", 0, 2**40),
        ("assets", "max_upload_bytes", 1, 2**40),
        ("assets", "max_request_bytes", 1, 2**42),
        ("assets", "max_output_size", 16, 16384),
        ("assets", "max_pixels", 1_000_000, 2_000_000_000),
        ("assets", "default_quality", 1, 100),
        ("assets", "decode_pixels", 1_000_000, 2_000_000_000),
        ("assets", "max_concurrent_renders", 1, 64),
        ("assets", "render_wait_seconds", 0, 300),
        ("assets", "renders_per_hour", 0, 1_000_000),
        ("assets", "thumbs_max_bytes", 1024 * 1024, 2**50),
        ("admin", "session_idle_seconds", 60, 30 * 86_400),
        ("admin", "session_max_seconds", 60, 365 * 86_400),
        ("admin", "login_attempts", 0, 1_000_000),
        ("admin", "login_window_seconds", 1, 86_400),
        ("sso", "timeout_seconds", 1, 300),
        ("sso", "logout_token_max_age_seconds", 10, 86_400),
    ]
    for section, key, low, high in checks:
        value = values[section][key]
        if not low <= value <= high:
            raise ConfigError(f"setting '{section}.{key}' must be between {low} and {high}")
    if values["smtp"]["host"] and "@" not in parseaddr(values["smtp"]["from"])[1]:
        raise ConfigError("setting 'smtp.from' must be an e-mail address, like \"Site <site@example.com>\"")
    if values["admin"]["secure_cookies"] not in ("auto", "always", "never"):
        raise ConfigError("setting 'admin.secure_cookies' must be \"auto\", \"always\" or \"never\"")
    sso = values["sso"]
    unknown = sorted(set(sso["mapping"]) - {"email", "user", "name", "role"})
    if unknown:
        raise ConfigError(f"setting 'sso.mapping' has unknown fields: {', '.join(unknown)} "
                          "(known: email, user, name, role)")
    for key in ("provider_url", "issuer", "redirect_uri"):
        if sso[key] and not sso[key].startswith(("http://", "https://")):
            raise ConfigError(f"setting 'sso.{key}' must start with http:// or https://")
    for check in SECTION_CHECKS.values():
        check(values)
    for key in ("cors_headers", "cors_methods"):
        bad = [v for v in values["api"][key] if not _TOKEN.fullmatch(v)]
        if bad:
            raise ConfigError(f"setting 'api.{key}' has names that are not HTTP tokens: {', '.join(map(repr, bad))}")
    if values["smtp"]["ssl"] and values["smtp"]["starttls"]:
        raise ConfigError("settings 'smtp.ssl' and 'smtp.starttls' exclude each other: ssl is TLS from the start")
