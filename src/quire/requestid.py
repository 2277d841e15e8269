"""The request id: one per HTTP request, answered in `X-Request-Id`, written
on the request's log lines (JSON logs, `[server] log_format = "json"`), its
audit entries (`request`) and the webhook deliveries its writes caused
(`request` in the delivery log, `quire-request-id` on the delivery), so one
id follows a change from the proxy's log to the receiver's.

A proxy's own id (`X-Request-Id` sent by nginx's `$request_id`, a load
balancer's) is kept when it looks like one (letters, digits, `-_.:`, 128 at
most); anything else is replaced, never copied into logs."""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import os
import re
import secrets
import time

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("quire_request_id", default=None)
ACCESS_FIELDS = ("method", "path", "status", "ms")
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


# A new id: this process's random half and a count (16 hex characters);
# asking the system for random bytes on every request cost more than the rest.
_PROCESS = secrets.token_hex(4)
_numbers = itertools.count(int.from_bytes(secrets.token_bytes(3), "big"))


def _new_process() -> None:
    """A forked worker: a random half of its own (else two workers count alike)."""
    global _PROCESS, _numbers
    _PROCESS = secrets.token_hex(4)
    _numbers = itertools.count(int.from_bytes(secrets.token_bytes(3), "big"))


os.register_at_fork(after_in_child=_new_process)


def request_id(incoming: str | None) -> str:
    """The id of a request that sent `incoming` in X-Request-Id (or none)."""
    if incoming is not None and _SANE.fullmatch(incoming):
        return incoming
    return f"{_PROCESS}{next(_numbers) & 0xFFFFFFFF:08x}"


def current() -> str | None:
    """The id of the request being answered here, or None (a job, a command)."""
    return REQUEST_ID.get()


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (ISO 8601, UTC), level, logger,
    message, the request id when there is one, and the traceback of an
    exception."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
                "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        for field in ACCESS_FIELDS:  # an access log line's parts, as fields of their own
            if hasattr(record, field):
                line[field] = getattr(record, field)
        rid = REQUEST_ID.get()
        if rid is not None:
            line["request_id"] = rid
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure_logging(json_lines: bool) -> None:
    """The server's log: text lines, or JSON lines."""
    if json_lines:
        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter())
        logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    else:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
