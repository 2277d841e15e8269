"""Settings: built-in defaults < `<data>/quire.toml` (or --config) < QUIRE_* env.

Every setting lives in a section; the environment variable of
`[server] port` is QUIRE_SERVER_PORT. Each section is a frozen dataclass
(see quire.sections) whose fields declare the settings' types and defaults;
`load_settings` checks what the file and the environment give against them
and builds the sections once at start, and a bad setting stops the service
with a message that names its key. Services get their section object.
"""

from __future__ import annotations

import copy
import functools
import logging
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parseaddr
from importlib.metadata import entry_points
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar
from urllib.parse import urlsplit

from quire.errors import ConfigError
from quire.forwarded import MAX_PROXY_HOPS
from quire.sections import Section, Spec, coerce, conforms, from_env, setting

log = logging.getLogger("quire.config")

# The CORS defaults; kept here, not in asgi.py, so settings import no web code.
CORS_HEADERS = [
    "accept", "accept-language", "api-key", "authorization", "cache-control", "content-language",
    "content-type", "if-match", "if-modified-since", "if-none-match", "pragma", "x-persona-audience",
    "x-persona-tz-offset", "x-persona-vars", "x-requested-with",
]
CORS_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
_TOKEN = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")  # an HTTP header or method name
MIN_WEBHOOK_KEY_CHARS = 32


@dataclass(frozen=True)
class ServerSettings(Section):
    NAME: ClassVar[str] = "server"
    host: str = "127.0.0.1"
    port: int = setting(8080, between=(1, 65535))
    workers: int = setting(1, between=(1, 64))
    quiet: bool = False
    access_log: bool = True
    # count requests for GET /metrics (docs/operations.md); and whether it
    # answers without a key (a scraper on a private network), else a key
    # whose role has `system/metrics`
    metrics: bool = True
    metrics_open: bool = False
    public_url: str = ""
    proxy_hops: int = setting(0, between=(0, MAX_PROXY_HOPS))
    # "text" lines, or "json": one object per line with the request id (quire.requestid)
    log_format: str = "text"
    # how much lower the CPU priority of bulk work is (imports, forks, merges,
    # backups: quire.processes.lower_priority); 0 leaves it as it is
    batch_niceness: int = setting(19, between=(0, 19))

    def check(self) -> None:
        _check_url("server.public_url", self.public_url)
        if self.log_format not in ("text", "json"):
            raise ConfigError("setting 'server.log_format' must be text or json")


@dataclass(frozen=True)
class ApiSettings(Section):
    NAME: ClassVar[str] = "api"
    max_body_bytes: int = setting(10 * 1024 * 1024, between=(1024, 2**40))
    max_json_depth: int = setting(64, between=(2, 10000))
    cors_origins: tuple[str, ...] = ("*",)
    cors_headers: tuple[str, ...] = tuple(CORS_HEADERS)
    cors_methods: tuple[str, ...] = tuple(CORS_METHODS)
    max_populate_depth: int = setting(5, between=(0, 5))
    kept_answers_mb: int = setting(96, between=(0, 65536))
    # API requests per minute per key (per client address without one), by
    # role; `rate_limit` for a role not listed; 0: no limit (quire.apilimits)
    rate_limits: dict[str, int] = setting({}, describe="a table of role = requests per minute")
    rate_limit: int = setting(0, between=(0, 1_000_000_000))
    # Cache-Control of answers to calls without a key, by route family
    # (`content`, `pages`, ...: the path's part after /api/); answers to a
    # key are always `private, no-cache` (quire.conditional)
    cache_control: dict[str, str] = setting({}, describe="a table of family = \"Cache-Control value\"")

    def check(self) -> None:
        bad_rates = [role for role, n in self.rate_limits.items() if not 0 <= n <= 1_000_000_000]
        if bad_rates:
            raise ConfigError(f"setting 'api.rate_limits' must give each role 0 to 1000000000 requests per "
                              f"minute: {', '.join(bad_rates)}")
        for key, names in (("cors_headers", self.cors_headers), ("cors_methods", self.cors_methods)):
            bad = [v for v in names if not _TOKEN.fullmatch(v)]
            if bad:
                raise ConfigError(f"setting 'api.{key}' has names that are not HTTP tokens: {', '.join(map(repr, bad))}")


@dataclass(frozen=True)
class StoreSettings(Section):
    NAME: ClassVar[str] = "store"
    # empty: the SQLite file in the data dir; postgresql://user:password@host:port/db to share a
    # database between instances (docs/deployment.md)
    url: str = setting("", secret=True)
    lock_timeout_ms: int = setting(5000, between=(0, 600_000))
    import_batch_items: int = setting(2000, between=(1, 1_000_000))
    # indexes built for the reads content gets (docs/query-language.md)
    auto_indexes: bool = True
    auto_index_max: int = setting(8, between=(0, 64))
    auto_index_min_rows: int = setting(1000, between=(0, 1_000_000_000))
    auto_index_unused_days: int = setting(30, between=(1, 3650))


@dataclass(frozen=True)
class ContentSettings(Section):
    NAME: ClassVar[str] = "content"
    default_locale_name: str = "Default"
    # how long a scheduled publish may run before another instance takes
    # its job over (the jobs table's lease)
    publish_lease_seconds: int = setting(60, between=(2, 3600))
    # what one aggregation may hold at once and run for, and how many run at
    # once on a worker (docs/configuration.md says how the default was chosen)
    aggregate_max_bytes: int = setting(256 * 1024 * 1024, between=(1024 * 1024, 2**40))
    aggregate_max_seconds: int = setting(5, between=(1, 3600))
    aggregations_at_once: int = setting(2, between=(1, 64))
    # the largest file `POST /api/content/import/{model}` takes (CSV, JSON, NDJSON)
    import_max_bytes: int = setting(100 * 1024 * 1024, between=(1024, 2**40))


@dataclass(frozen=True)
class AssetSettings(Section):
    NAME: ClassVar[str] = "assets"
    max_upload_bytes: int = setting(64 * 1024 * 1024, between=(1, 2**40))
    max_request_bytes: int = setting(256 * 1024 * 1024, between=(1, 2**42))
    max_output_size: int = setting(4096, between=(16, 16384))
    max_pixels: int = setting(100_000_000, between=(1_000_000, 2_000_000_000))
    decode_pixels: int = setting(24_000_000, between=(1_000_000, 2_000_000_000))
    max_concurrent_renders: int = setting(2, between=(1, 64))
    render_wait_seconds: int = setting(5, between=(0, 300))
    # the longest render (estimated before it starts) a caller who cannot
    # upload or edit assets may cause; 0: no limit
    render_budget_seconds: int = setting(3, between=(0, 3600))
    renders_per_hour: int = setting(100, between=(0, 1_000_000))
    thumbs_max_bytes: int = setting(1024 * 1024 * 1024, between=(1024 * 1024, 2**50))
    presets: dict[str, dict[str, Any]] = setting(
        {}, describe="a table of name = {w = ..., h = ..., m = \"...\", q = ..., mime = \"...\"}")
    default_quality: int = setting(80, between=(1, 100))
    allowed_types: tuple[str, ...] = (
        "image/*", "video/*", "audio/*", "application/pdf", "text/plain", "text/csv", "text/markdown",
        "application/json", "application/zip", "application/gzip", "application/x-tar",
        "application/x-7z-compressed", "application/msword", "application/vnd.openxmlformats-officedocument.*",
        "application/vnd.ms-excel", "application/vnd.ms-powerpoint", "application/vnd.oasis.opendocument.*",
        "application/rtf", "application/xml", "font/*",
    )
    refused_types: tuple[str, ...] = ()
    # where files live: "" is the data folder, "s3://bucket/prefix" a bucket (docs/assets.md)
    storage: str = ""
    s3_endpoint: str = ""
    s3_region: str = ""
    s3_addressing: str = "auto"
    s3_access_key: str = setting("", secret=True)
    s3_secret_key: str = setting("", secret=True)

    # `presets` is checked by the assets module's rules (SECTION_CHECKS)

    def check(self) -> None:
        if self.storage:
            s3_location(self.storage)
        _check_url("assets.s3_endpoint", self.s3_endpoint)
        if self.s3_addressing not in ("auto", "path", "virtual"):
            raise ConfigError("setting 'assets.s3_addressing' must be \"auto\", \"path\" or \"virtual\"")
        if bool(self.s3_access_key) != bool(self.s3_secret_key):
            raise ConfigError("settings 'assets.s3_access_key' and 'assets.s3_secret_key' go together: "
                              "give both, or neither (then the AWS_* environment variables are used)")


_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_PREFIX_PART = re.compile(r"[A-Za-z0-9!_.*'()-]+")


def s3_location(url: str) -> tuple[str, str]:
    """(bucket, key prefix) of `[assets] storage = "s3://bucket/prefix"`;
    the prefix is "" or ends with "/". The value is never echoed in the
    error (a pasted URL might carry a secret)."""
    scheme, _, rest = url.partition("://")
    bucket, _, prefix = rest.partition("/")
    if scheme != "s3" or not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise ConfigError("setting 'assets.storage' must be \"\" (the data folder) or \"s3://bucket/prefix\" "
                          "with an S3 bucket name (3-63 lower-case letters, digits, dots and hyphens)")
    parts = [part for part in prefix.split("/") if part]
    if any(not _PREFIX_PART.fullmatch(part) or part in (".", "..") for part in parts):
        raise ConfigError("setting 'assets.storage': the prefix after the bucket may hold only letters, digits "
                          "and !_.*'()- between slashes")
    return bucket, "".join(f"{part}/" for part in parts)


@dataclass(frozen=True)
class PagesSettings(Section):
    NAME: ClassVar[str] = "pages"
    site_url: str = ""
    default_language: str = "en"
    locale_prefix: bool = True
    max_sitemap_urls: int = setting(50_000, between=(1, 1_000_000))
    # where the site shows a page's preview: {token}, {id}, {route}, {slug}, ...
    preview_url: str = ""

    def check(self) -> None:
        _check_url("pages.site_url", self.site_url)
        if self.preview_url and url_origin(self.preview_url) is None:
            raise ConfigError("setting 'pages.preview_url' must be an http(s) address like "
                              "https://www.example.com/preview{route}?token={token}")


@dataclass(frozen=True)
class InboxSettings(Section):
    NAME: ClassVar[str] = "inbox"
    max_file_bytes: int = setting(10 * 1024 * 1024, between=(1, 2**40))
    max_request_bytes: int = setting(32 * 1024 * 1024, between=(1024, 2**42))
    max_files: int = setting(10, between=(0, 1000))
    max_fields: int = setting(50, between=(1, 10_000))
    max_field_length: int = setting(10_000, between=(1, 10_000_000))
    rate_limit: int = setting(10, between=(0, 1_000_000))
    rate_window_seconds: int = setting(60, between=(1, 86_400))
    # read by load_settings as [server] proxy_hops = 1; nothing else reads it
    trust_forwarded_for: bool = setting(False, deprecated=True)


@dataclass(frozen=True)
class SmtpSettings(Section):
    NAME: ClassVar[str] = "smtp"
    host: str = ""
    port: int = setting(587, between=(1, 65535))
    user: str = ""
    password: str = setting("", secret=True)
    starttls: bool = True
    ssl: bool = False
    from_address: str = setting("quire@localhost", key="from")  # `from` is a Python keyword
    timeout_seconds: int = setting(10, between=(1, 600))
    max_attempts: int = setting(6, between=(1, 100))
    retry_seconds: int = setting(30, between=(1, 86_400))
    max_attachment_bytes: int = setting(10 * 1024 * 1024, between=(0, 2**40))

    def check(self) -> None:
        if self.host and "@" not in parseaddr(self.from_address)[1]:
            raise ConfigError("setting 'smtp.from' must be an e-mail address, like \"Site <site@example.com>\"")
        if self.ssl and self.starttls:
            raise ConfigError("settings 'smtp.ssl' and 'smtp.starttls' exclude each other: ssl is TLS from the start")


@dataclass(frozen=True)
class RevisionsSettings(Section):
    """The history of items, pages and the pages' settings (docs/revisions.md):
    whether writes record revisions, how many are kept per item (older ones
    are dropped as new ones are written) and for how long (a daily job
    drops older ones; 0 keeps them whatever their age)."""

    NAME: ClassVar[str] = "revisions"
    enabled: bool = True
    keep: int = setting(50, between=(1, 100_000))
    keep_days: int = setting(365, between=(0, 36_500))


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
    concurrency: int = setting(4, between=(1, 64))  # deliveries under way at once in one process
    max_attempts: int = setting(8, between=(1, 50))
    retry_ms: int = setting(60_000, between=(10, 86_400_000))
    keep_days: int = setting(30, between=(0, 36_500))
    disable_after: int = setting(20, between=(0, 1_000_000))
    allow_private: bool = False
    allow_hosts: tuple[str, ...] = ()

    def check(self) -> None:
        if self.key and len(self.key) < MIN_WEBHOOK_KEY_CHARS:
            raise ConfigError(f"setting 'webhooks.key' must be at least {MIN_WEBHOOK_KEY_CHARS} characters "
                              "(a random text, e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
        for host in self.allow_hosts:
            if not host or any(c.isspace() for c in host) or "/" in host:
                raise ConfigError(f"setting 'webhooks.allow_hosts' has {host!r}, which is no host name or address")


@dataclass(frozen=True)
class AuditSettings(Section):
    """The audit log (docs/audit.md): whether logins, changes of keys,
    roles, users and models, content writes and exports are recorded, and
    for how many days entries are kept (a daily job drops older ones; 0
    keeps them whatever their age)."""

    NAME: ClassVar[str] = "audit"
    enabled: bool = True
    keep_days: int = setting(365, between=(0, 36_500))


@dataclass(frozen=True)
class FeedSettings(Section):
    """The change feed (docs/delivery.md): how many days of changes are
    kept for readers to catch up (0 keeps them all), how often each worker
    looks for new ones for its streams, and the caps that keep streams
    from holding memory: messages queued per stream, streams per key (or
    address without a key) and per worker process."""

    NAME: ClassVar[str] = "feed"
    keep_days: int = setting(7, between=(0, 3650))
    poll_ms: int = setting(100, between=(10, 10_000))
    queue: int = setting(1000, between=(10, 100_000))
    streams_per_key: int = setting(20, between=(1, 100_000))
    streams_per_worker: int = setting(2000, between=(1, 1_000_000))


@dataclass(frozen=True)
class CdnSettings(Section):
    """A CDN or caching proxy in front of the read API (docs/delivery.md#cdn):
    whether answers name what they contain in `Surrogate-Key` and
    `Cache-Tag` (by default: when a purge address is set), and the purge
    request sent after each write with the tags it touched."""

    NAME: ClassVar[str] = "cdn"
    tags: str = "auto"  # auto, on or off
    # empty: no purging; else the CDN's purge-by-tag address (Fastly's
    # https://api.fastly.com/service/<id>/purge, Cloudflare's
    # https://api.cloudflare.com/client/v4/zones/<zone>/purge_cache)
    purge_url: str = setting("", secret=True)
    purge_method: str = "POST"
    # headers of the purge request (the CDN's API key goes here; never logged)
    purge_headers: dict[str, str] = setting({}, secret=True, describe="a table of header = value")
    # where the tags go: a header of that name, space-separated (Fastly's
    # `Surrogate-Key`), or else a JSON body {"<purge_field>": [tags]}
    # (Cloudflare's `tags`, Fastly's `surrogate_keys`)
    purge_header: str = ""
    purge_field: str = "tags"
    tags_per_request: int = setting(30, between=(1, 10_000))
    timeout_seconds: int = setting(10, between=(1, 120))
    max_attempts: int = setting(10, between=(1, 100))
    retry_ms: int = setting(5_000, between=(10, 86_400_000))

    @property
    def tagging(self) -> bool:
        return self.tags == "on" or (self.tags == "auto" and bool(self.purge_url))

    def check(self) -> None:
        if self.tags not in ("auto", "on", "off"):
            raise ConfigError("setting 'cdn.tags' must be auto, on or off")
        if not _TOKEN.fullmatch(self.purge_method):
            raise ConfigError(f"setting 'cdn.purge_method' is {self.purge_method!r}, which is not an HTTP method")
        if self.purge_url:
            _check_url("cdn.purge_url", self.purge_url)
        for name in [*self.purge_headers, *([self.purge_header] if self.purge_header else [])]:
            if not _TOKEN.fullmatch(name):
                raise ConfigError(f"setting 'cdn.purge_headers' / 'cdn.purge_header' has {name!r}, "
                                  "which is not an HTTP header name")
        if not self.purge_header and not self.purge_field:
            raise ConfigError("setting 'cdn.purge_field' must name the JSON field of the tags "
                              "(or set 'cdn.purge_header')")


@dataclass(frozen=True)
class TracesSettings(Section):
    """OpenTelemetry traces (docs/operations.md#traces): on or off, where
    the spans go (an OTLP/HTTP traces address) and what share of the
    requests starting a trace is recorded."""

    NAME: ClassVar[str] = "traces"
    enabled: bool = False
    endpoint: str = "http://127.0.0.1:4318/v1/traces"
    service_name: str = "quire"
    sample_percent: int = setting(100, between=(0, 100))

    def check(self) -> None:
        _check_url("traces.endpoint", self.endpoint)


@dataclass(frozen=True)
class JobsSettings(Section):
    """The jobs table (quire.jobs): how often a runner looks for due work
    when nothing woke it, and how long finished jobs are kept."""

    NAME: ClassVar[str] = "jobs"
    poll_seconds: int = setting(10, between=(1, 3600))
    keep_done_seconds: int = setting(7 * 86_400, between=(0, 3650 * 86_400))
    keep_failed_seconds: int = setting(30 * 86_400, between=(0, 3650 * 86_400))


@dataclass(frozen=True)
class HooksSettings(Section):
    NAME: ClassVar[str] = "hooks"
    modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModulesSettings(Section):
    """Modules of installed packages (entry points `quire.modules`)."""

    NAME: ClassVar[str] = "modules"
    packages: bool = True
    skip: tuple[str, ...] = ()


@dataclass(frozen=True)
class AdminSettings(Section):
    NAME: ClassVar[str] = "admin"
    session_idle_seconds: int = setting(2 * 3600, between=(60, 30 * 86_400))
    session_max_seconds: int = setting(12 * 3600, between=(60, 365 * 86_400))
    secure_cookies: str = "auto"
    login_attempts: int = setting(5, between=(0, 1_000_000))
    login_window_seconds: int = setting(300, between=(1, 86_400))

    def check(self) -> None:
        if self.secure_cookies not in ("auto", "always", "never"):
            raise ConfigError("setting 'admin.secure_cookies' must be \"auto\", \"always\" or \"never\"")


# A host as an origin names it: ASCII labels (an international name in its
# xn-- form) or a bracketed IPv6 address, and an optional port. Nothing else
# may stand there (credentials, placeholders, `;` or `,`, which would end a
# CSP directive or policy the origin is written into).
_ORIGIN_HOST = re.compile(r"(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?")


def url_origin(uri: str) -> str | None:
    """`scheme://host[:port]` of an http(s) address (None: not one; one
    with spaces, quotes, control characters, credentials or a host that is
    not plain ASCII is not one)."""
    if any(c in uri for c in " \"'<>\\`") or any(ord(c) < 32 or ord(c) == 127 for c in uri):
        return None
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (a port that is no number raises here)
    except ValueError:
        return None
    netloc = parts.netloc.lower()
    if parts.scheme not in ("http", "https") or not _ORIGIN_HOST.fullmatch(netloc):
        return None
    return f"{parts.scheme}://{netloc}"


def _check_url(name: str, url: str) -> None:
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"setting '{name}' must start with http:// or https://")


# [sso]: api.md's names and defaults. An empty string stands for api.md's
# null (TOML has no null); the properties read the settings that way.
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


@dataclass(frozen=True)
class GraphqlSettings(Section):
    """`/api/gql` (docs/graphql.md): what one request may ask."""

    NAME: ClassVar[str] = "graphql"
    enabled: bool = True
    max_query_bytes: int = setting(64 * 1024, between=(256, 4 * 1024 * 1024))
    max_tokens: int = setting(20_000, between=(100, 1_000_000))
    max_depth: int = setting(12, between=(2, 64))
    max_aliases: int = setting(100, between=(1, 100_000))
    max_cost: int = setting(50_000, between=(10, 100_000_000))
    max_items: int = setting(1000, between=(1, 100_000))
    introspection: bool = True
    persisted_queries: int = setting(10_000, between=(0, 10_000_000))


@dataclass(frozen=True)
class AssistantsSettings(Section):
    """AI assistants over the Model Context Protocol (docs/ai.md): whether
    `/mcp` is served, and the bounds of their writes: items per call, write
    calls per minute per key, and the size of a file uploaded in one call.
    Their writes are drafts whatever the key's role."""

    NAME: ClassVar[str] = "assistants"
    enabled: bool = True
    max_items_per_call: int = setting(20, between=(1, 1000))
    writes_per_minute: int = setting(60, between=(1, 100_000))
    max_upload_bytes: int = setting(10 * 1024 * 1024, between=(1024, 1024 * 1024 * 1024))


@dataclass(frozen=True)
class TranslateSettings(Section):
    """Machine translation of content, pages' fields and translation projects
    (docs/ai.md#machine-translation): the provider, its address and key,
    how long one request may take, and whether machine translations of a
    published item wait in its draft for an editor (kept off the public
    API until published) or are written to the item marked unreviewed."""

    NAME: ClassVar[str] = "translate"
    provider: str = setting("", describe="\"deepl\", \"libretranslate\" or \"\" (off)")
    url: str = ""
    api_key: str = setting("", secret=True)
    timeout_seconds: int = setting(20, between=(1, 300))
    hide_unreviewed: bool = True
    # the language of content's default locale (Cockpit's `default` names none); "" lets the provider detect it
    source_language: str = ""

    def check(self) -> None:
        if self.provider not in ("", "deepl", "libretranslate"):
            raise ConfigError("setting 'translate.provider' is \"deepl\", \"libretranslate\" or \"\"")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ConfigError("setting 'translate.url' must start with http:// or https://")


@dataclass(frozen=True)
class VisionSettings(Section):
    """Suggested alt text and tags for uploaded images (docs/ai.md#alt-text-and-tags),
    from a vision model behind an OpenAI-compatible chat completions API (a
    local one such as Ollama, llama.cpp's server or vLLM, or a hosted one):
    its address (empty: off), key, model and how long one request may take."""

    NAME: ClassVar[str] = "vision"
    url: str = ""
    api_key: str = setting("", secret=True)
    model: str = ""
    timeout_seconds: int = setting(60, between=(1, 600))

    def check(self) -> None:
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ConfigError("setting 'vision.url' must start with http:// or https://")


S = TypeVar("S", bound=Section)

# section name -> its class; load_settings reads exactly these sections.
SECTIONS: dict[str, type[Section]] = {cls.NAME: cls for cls in (
    ServerSettings, ApiSettings, StoreSettings, ContentSettings, AssetSettings, PagesSettings,
    InboxSettings, SmtpSettings, JobsSettings, RevisionsSettings, HooksSettings, ModulesSettings, AdminSettings,
    SsoSettings,
    WebhooksSettings,
    AuditSettings,
    FeedSettings,
    CdnSettings,
    TracesSettings,
    GraphqlSettings, AssistantsSettings, TranslateSettings, VisionSettings,
)}


# Rules a feature module keeps for its own settings (the assets module's
# image presets), added when the module is imported (`add_check`) and run by
# `load_settings` on the built sections: settings import no module above them.
SECTION_CHECKS: dict[str, Callable[[Settings], None]] = {}


def add_check(name: str, check: Callable[[Settings], None]) -> None:
    """Run `check(settings)` on every load; it raises ConfigError naming the
    setting. Added again under the same name, it replaces the earlier one."""
    SECTION_CHECKS[name] = check


def register_section(cls: type[S]) -> type[S]:
    """Add a section (a `Section` dataclass, such as a module's own) to
    what load_settings reads; settings loaded afterwards have it."""
    if SECTIONS.get(cls.NAME, cls) is not cls:
        raise ValueError(f"settings section [{cls.NAME}] is taken by {SECTIONS[cls.NAME].__qualname__}")
    cls.specs()  # a declaration the loader cannot read fails here, not at the first start
    SECTIONS[cls.NAME] = cls
    return cls


@functools.cache
def _import_module_packages(choice: ModulesSettings) -> set[str]:
    """Import the installed module packages (entry points `quire.modules`,
    see packages.py) the `[modules]` settings let in, before the rest of
    the settings are read: a package registers its settings section when
    it is imported. One turned off or skipped is not imported, so a broken
    package can be left out of a site that cannot start with it; answers
    the names of those left out. Once a process per choice: settings are
    read often (every test), the installed packages do not change."""
    left_out: set[str] = set()
    for point in entry_points(group="quire.modules"):
        if not choice.packages or point.name in choice.skip:
            left_out.add(point.name)
            continue
        try:
            point.load()
        except Exception as exc:  # any error of a package's import: named, not a traceback
            raise ConfigError(f"module package {point.value!r} (quire.modules entry point {point.name!r}) "
                              f"cannot be loaded: {type(exc).__name__}: {exc}") from exc
    return left_out


def _modules_choice(parsed: dict[str, Any], origin: str, environ: Mapping[str, str],
                    overrides: dict[str, dict[str, Any]]) -> ModulesSettings:
    """The `[modules]` section alone, from the file, the environment and
    the overrides, as the whole settings will have it."""
    index = {"modules": {spec.key: spec for spec in ModulesSettings.specs()}}
    values = {"modules": {key: copy.deepcopy(spec.default) for key, spec in index["modules"].items()}}
    if "modules" in parsed:
        _merge(values, index, {"modules": parsed["modules"]}, origin)
    _merge_env(values, index, environ)
    for key, value in overrides.get("modules", {}).items():
        _set(values, index, "modules", key, value, "override")
    built = _build(ModulesSettings, values["modules"])
    assert isinstance(built, ModulesSettings)
    return built


def defaults() -> dict[str, dict[str, Any]]:
    """Every setting at its default: section -> TOML key -> value."""
    return {name: cls().as_values() for name, cls in SECTIONS.items()}


class _SectionOf(Generic[S]):
    """`settings.server`: the section object of that class, typed."""

    def __init__(self, cls: type[S]) -> None:
        self.cls = cls

    def __get__(self, settings: Settings | None, owner: type) -> S:
        if settings is None:
            raise AttributeError(self.cls.NAME)
        return settings.section(self.cls)


def _default_sections() -> dict[str, Section]:
    return {name: cls() for name, cls in SECTIONS.items()}


@dataclass(frozen=True)
class Settings:
    """The settings of one run: a typed object per section, read as
    attributes (`settings.assets.max_upload_bytes`); services receive the
    section they need."""

    data_dir: Path
    sections: dict[str, Section] = field(default_factory=_default_sections)
    # Deprecated settings that were used, one line each: `quire serve` logs
    # them once at start (see log_deprecations).
    deprecations: list[str] = field(default_factory=list)

    server = _SectionOf(ServerSettings)
    api = _SectionOf(ApiSettings)
    store = _SectionOf(StoreSettings)
    content = _SectionOf(ContentSettings)
    assets = _SectionOf(AssetSettings)
    pages = _SectionOf(PagesSettings)
    inbox = _SectionOf(InboxSettings)
    smtp = _SectionOf(SmtpSettings)
    jobs = _SectionOf(JobsSettings)
    revisions = _SectionOf(RevisionsSettings)
    webhooks = _SectionOf(WebhooksSettings)
    audit = _SectionOf(AuditSettings)
    feed = _SectionOf(FeedSettings)
    cdn = _SectionOf(CdnSettings)
    traces = _SectionOf(TracesSettings)
    hooks = _SectionOf(HooksSettings)
    modules = _SectionOf(ModulesSettings)
    admin = _SectionOf(AdminSettings)
    sso = _SectionOf(SsoSettings)
    graphql = _SectionOf(GraphqlSettings)
    assistants = _SectionOf(AssistantsSettings)
    translate = _SectionOf(TranslateSettings)
    vision = _SectionOf(VisionSettings)

    def section(self, cls: type[S]) -> S:
        """The section object of this class (for sections registered by a
        module, which have no attribute here)."""
        found = self.sections[cls.NAME]
        if not isinstance(found, cls):
            raise TypeError(f"settings section [{cls.NAME}] is a {type(found).__qualname__}, not a {cls.__qualname__}")
        return found

    @functools.cached_property
    def values(self) -> Mapping[str, Mapping[str, Any]]:
        """Every setting by section and TOML key, as plain data (lists and
        tables), read-only. Kept for hooks (`quire.settings`, see hooks.md)
        and tests; Quire's own code reads the typed sections."""
        return MappingProxyType({name: MappingProxyType(section.as_values())
                                 for name, section in self.sections.items()})

    def get(self, section: str, key: str) -> Any:
        """One setting by section and TOML key (`get("smtp", "from")`); kept
        for hooks, like `values`."""
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
    path = Path(config_file) if config_file else data / "quire.toml"
    if config_file and not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    parsed: dict[str, Any] = {}
    if path.exists():
        try:
            parsed = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
    environ = os.environ if env is None else env
    # the packages it lets in add their sections as they are imported; the
    # section of one left out (named as its module) stays in the file unread
    left_out = _import_module_packages(_modules_choice(parsed, str(path), environ, overrides or {}))
    sections = dict(SECTIONS)
    index = {name: {spec.key: spec for spec in cls.specs()} for name, cls in sections.items()}
    values = {name: {key: copy.deepcopy(spec.default) for key, spec in keys.items()} for name, keys in index.items()}
    _merge(values, index, {k: v for k, v in parsed.items() if k in index or k not in left_out}, str(path))
    _merge_env(values, index, environ)
    for section, keys in (overrides or {}).items():
        for key, value in keys.items():
            _set(values, index, section, key, value, "override")

    def given(section: str, key: str) -> bool:
        return any(key in (source.get(section) or {}) for source in (parsed, overrides or {})) \
            or index[section][key].env in environ

    deprecations = _trust_forwarded_for(values, given("inbox", "trust_forwarded_for"),
                                        given("server", "proxy_hops"))
    built = {name: _build(cls, values[name]) for name, cls in sections.items()}  # validates
    settings = Settings(data, built, deprecations)
    for check in SECTION_CHECKS.values():
        check(settings)
    return settings


def _build(cls: type[Section], values: dict[str, Any]) -> Section:
    make: Any = cls  # a dataclass: its fields are its keyword arguments
    section: Section = make(**{spec.attr: values[spec.key] for spec in cls.specs()})
    return section


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


Index = dict[str, dict[str, Spec]]  # section -> TOML key -> its setting


def _merge(values: dict[str, dict[str, Any]], index: Index, parsed: dict[str, Any], origin: str) -> None:
    for section, keys in parsed.items():
        if section not in index:
            raise ConfigError(f"{origin}: unknown section [{section}]")
        if not isinstance(keys, dict):
            raise ConfigError(f"{origin}: '{section}' must be a table")
        for key, value in keys.items():
            _set(values, index, section, key, value, origin)


def _merge_env(values: dict[str, dict[str, Any]], index: Index, env: Mapping[str, str]) -> None:
    for section, keys in index.items():
        for key, spec in keys.items():
            if spec.env in env:
                _set(values, index, section, key, from_env(env[spec.env], spec), spec.env)


def _set(values: dict[str, dict[str, Any]], index: Index, section: str, key: str, value: Any, origin: str) -> None:
    spec = index.get(section, {}).get(key)
    if spec is None:
        raise ConfigError(f"{origin}: unknown setting '{section}.{key}'")
    if not conforms(value, spec.hint):
        raise ConfigError(f"{origin}: setting '{spec.name}' must be {spec.describe}")
    values[section][key] = coerce(value, spec)
