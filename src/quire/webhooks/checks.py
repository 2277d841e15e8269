"""What a webhook may be: each sent field checked, with a reason naming it.
Everything here runs before anything is stored (a 400 names every bad
field)."""

from __future__ import annotations

import functools
import re
from typing import Any
from urllib.parse import urlsplit

from quire.errors import BadRequest, ValidationError
from quire.webhooks.deliver import Policy, Refused, literal_address

FIELDS = ("name", "url", "events", "models", "headers", "enabled")
MAX_NAME = 100
MAX_URL = 2048
MAX_EVENTS = 50
MAX_MODELS = 100
MAX_HEADERS = 20
MAX_HEADER_NAME = 64
MAX_HEADER_VALUE = 1024
PATTERN = re.compile(r"^(?:\*|[a-z0-9_*-]+(?:\.[a-z0-9_*-]+){0,7})$")
MODEL = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
TOKEN = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
HOST = re.compile(r"^(?=.{1,253}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.?$")
# Headers Quire sets itself, or that describe the connection rather than
# the message (hop-by-hop): a webhook may not send its own.
REFUSED_HEADERS = frozenset({
    "host", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
    "upgrade", "expect", "proxy-authorization", "proxy-authenticate", "proxy-connection", "user-agent",
})


def check_webhook(data: Any, current: dict[str, Any] | None, policy: Policy) -> dict[str, Any]:
    """The webhook fields of a create (`current` None: name, url and events
    required) or an update (only the sent fields change), checked."""
    if not isinstance(data, dict):
        raise BadRequest("Send the webhook as a JSON object")
    unknown = sorted(k for k in data if k not in FIELDS)
    if unknown:
        raise BadRequest(f"Unknown field(s): {', '.join(unknown)[:200]}", fields=unknown[:20])
    errors: dict[str, str] = {}
    clean: dict[str, Any] = {}
    checks = {"name": check_name, "url": lambda v: check_url(v, policy), "events": check_events,
              "models": check_models, "headers": check_headers, "enabled": check_enabled}
    for name, check in checks.items():
        if name in data:
            try:
                clean[name] = check(data[name])
            except ValueError as exc:
                errors[name] = str(exc)
        elif current is None and name in ("name", "url", "events"):
            errors[name] = "is required"
    if errors:
        raise ValidationError("webhook", errors)
    return clean


def check_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty text")
    if len(value) > MAX_NAME:
        raise ValueError(f"must be at most {MAX_NAME} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("must not hold control characters")
    return value.strip()


def check_url(value: Any, policy: Policy) -> str:
    """An absolute http(s) URL without credentials or fragment, to a host
    name or a public address (a private literal address only if allowed);
    host names are resolved and checked again at each delivery."""
    if not isinstance(value, str) or not value:
        raise ValueError("must be an http or https URL")
    if len(value) > MAX_URL:
        raise ValueError(f"must be at most {MAX_URL} characters")
    if any(ord(c) <= 32 or ord(c) >= 127 for c in value):
        raise ValueError("must be plain ASCII without spaces or control characters "
                         "(write an international host name in its xn-- form, and percent-encode the path)")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValueError("is not a valid URL (check the host and port)") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must start with http:// or https://")
    if "@" in parts.netloc:
        raise ValueError("must not hold a user name or password (send credentials in headers)")
    if parts.fragment or value.endswith("#"):
        raise ValueError("must not have a #fragment")
    host = parts.hostname or ""
    if not host:
        raise ValueError("must name a host")
    if port == 0:
        raise ValueError("must not use port 0")
    literal = literal_address(host)
    try:
        if literal is not None:
            policy.check_address(literal, host)
        elif not HOST.match(host):
            raise ValueError("names no valid host")
        elif host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost"):
            policy.check_address(literal_address("127.0.0.1"), host)  # type: ignore[arg-type]
    except Refused as exc:
        raise ValueError(f"is refused: {exc}") from None
    return value


def check_events(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ValueError("must be a non-empty list of event names or patterns (content.item.saved, content.*, *)")
    if len(value) > MAX_EVENTS:
        raise ValueError(f"must have at most {MAX_EVENTS} entries")
    out: list[str] = []
    for entry in value:
        if not isinstance(entry, str) or len(entry) > 100 or not PATTERN.match(entry):
            shown = repr(entry)[:60] if isinstance(entry, str) else type(entry).__name__
            raise ValueError(f"has {shown}, which is no event name or pattern "
                             "(lowercase names separated by dots, * for any part)")
        if entry not in out:
            out.append(entry)
    return out


def check_models(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_MODELS:
        raise ValueError(f"must be a list of at most {MAX_MODELS} model names")
    out: list[str] = []
    for entry in value:
        if not isinstance(entry, str) or not MODEL.match(entry):
            shown = repr(entry)[:60] if isinstance(entry, str) else type(entry).__name__
            raise ValueError(f"has {shown}, which is no model name")
        if entry not in out:
            out.append(entry)
    return out


def check_headers(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_HEADERS:
        raise ValueError(f"must be an object of at most {MAX_HEADERS} header names and texts")
    out: dict[str, str] = {}
    for name, text in value.items():
        shown = repr(name)[:60]
        if not TOKEN.match(name) or len(name) > MAX_HEADER_NAME:
            raise ValueError(f"has {shown}, which is no header name")
        lower = name.lower()
        if lower in REFUSED_HEADERS or lower.startswith(("webhook-", "proxy-")):
            raise ValueError(f"may not set {shown}: Quire sets it, or it is about the connection")
        if lower in (k.lower() for k in out):
            raise ValueError(f"has {shown} twice")
        if not isinstance(text, str) or len(text) > MAX_HEADER_VALUE:
            raise ValueError(f"{shown} must be a text of at most {MAX_HEADER_VALUE} characters")
        # printable ASCII and tabs: no CR/LF to start another header, nothing
        # a receiver would decode differently
        if any(not (32 <= ord(c) < 127 or c == "\t") for c in text):
            raise ValueError(f"{shown} must be printable ASCII (no line breaks or control characters)")
        out[name] = text.strip()
    return out


def check_enabled(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


@functools.lru_cache(maxsize=1024)
def _pattern(entry: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in entry.split("*")) + "$")


def matches(patterns: list[str], event: str) -> bool:
    """Whether `event` is one of the names, or matches a pattern (`*` is any
    text, dots included: `content.*` matches `content.item.saved`)."""
    return any(p == event or ("*" in p and _pattern(p).match(event)) for p in patterns)
