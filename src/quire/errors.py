"""One exception family for every API error; `status` lives on the class.

Routes and services raise these; `app.py` renders every one of them (and any
unexpected exception) as `{"error": message}` with the right status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ApiError(Exception):
    status = 500

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra
        self.headers: dict[str, str] = {}

    def body(self) -> dict[str, Any]:
        return {"error": self.message, **self.extra}


class BadRequest(ApiError):
    status = 400


class ValidationError(BadRequest):
    """400 for a document that failed its checks: "Invalid {what}: field
    reason; field reason", with `fields` naming every bad field (sorted, or
    in the order found with `keep_order`). `limit` caps how many reasons the
    message spells out ("; and N more"), for documents with many keys."""

    def __init__(self, what: str, errors: Mapping[str, str], *, limit: int | None = None,
                 keep_order: bool = False) -> None:
        shown = list(errors.items())[:limit]
        detail = "; ".join(f"{field} {reason}" for field, reason in shown)
        if len(errors) > len(shown):
            detail += f"; and {len(errors) - len(shown)} more"
        super().__init__(f"Invalid {what}: {detail}", fields=list(errors) if keep_order else sorted(errors))
        self.errors = dict(errors)


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class MethodNotAllowed(ApiError):
    status = 405

    def __init__(self, allowed: list[str], message: str = "Method not allowed") -> None:
        super().__init__(message)
        self.headers = {"Allow": ", ".join(allowed)}


class Conflict(ApiError):
    status = 409


class PreconditionFailed(ApiError):
    status = 412


class PayloadTooLarge(ApiError):
    status = 413


class RetryLater(ApiError):
    """An answer with `Retry-After`: the seconds after which to try again."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.headers = {"Retry-After": str(retry_after)}


class TooManyRequests(RetryLater):
    """429: this caller asked too often (a rate limit)."""

    status = 429


class Unavailable(RetryLater):
    """503: the server cannot answer now (busy for everyone)."""

    status = 503


class StoreUnavailable(Unavailable):
    """The database server cannot be reached (it went away, or refuses
    connections); the next request tries again."""


class StoreBusy(Unavailable):
    """The database's write lock could not be had in time (another process
    or a long import holds it)."""


class ConfigError(Exception):
    """Bad configuration, reported at start with the offending key."""
