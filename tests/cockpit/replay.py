"""The recorded Cockpit answers served again on 127.0.0.1: a stand-in for
the real Cockpit the fixture was made with (which needs PHP 8.3), answering
each recorded request (path, query and key) with what Cockpit answered."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.cockpit.conftest import KEYS, answers

Key = tuple[str, tuple[tuple[str, str], ...], str]


@contextmanager
def replayed(change: Callable[[dict[str, Any]], None] | None = None) -> Iterator[tuple[str, list[str]]]:
    """(base URL, the requests asked) of a server answering as Cockpit did;
    `change` may alter a recorded answer first."""
    recorded: dict[Key, dict[str, Any]] = {}
    for answer in answers():
        request = answer["request"]
        if change is not None:
            change(answer)
        recorded[(request["path"], tuple(sorted(request["query"].items())), request["key"])] = answer
    roles = {text: role for role, text in KEYS.items()}
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            url = urlsplit(self.path)
            role = roles.get(self.headers.get("api-key", ""), "")
            asked.append(self.path)
            found = recorded.get((url.path, tuple(sorted(parse_qsl(url.query))), role))
            if found is None:
                status, kind, body = 404, "application/json", json.dumps({"error": "not recorded"}).encode()
            else:
                status, kind = found["status"], found["headers"].get("content-type", "application/json")
                value = found["body"]
                body = (json.dumps(value) if kind.startswith("application/json") else str(value or "")).encode()
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
