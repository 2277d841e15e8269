"""A real HTTP receiver for webhook tests: a thread on 127.0.0.1 that
records every request (headers, body, when) and answers what the test
asks (a status per request, or a pause before answering)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    at: float
    path: str
    method: str = "POST"

    @property
    def json(self) -> Any:
        return orjson.loads(self.body)

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]


class Receiver:
    def __init__(self, answer: Callable[[Received], int] | None = None) -> None:
        self.received: list[Received] = []
        self.answer = answer or (lambda _: 200)
        self.release = threading.Event()  # a handler told to hang waits for it
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                got = Received({k.lower(): v for k, v in self.headers.items()}, body, time.time(), self.path,
                               self.command)
                status = receiver.answer(got)
                with receiver._changed:
                    receiver.received.append(got)
                    receiver._changed.notify_all()
                if status < 0:  # hang until released, then drop the connection
                    receiver.release.wait(10)
                    return
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_PURGE = do_POST  # noqa: N815 (a CDN purge request, tests/cdn)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"received {len(self.received)} of {count} requests")
                self._changed.wait(left)
            return list(self.received)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def expected_signature(secret: str, got: Received) -> str:
    """The v1 signature as a receiver computes it (Standard Webhooks)."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{got.headers['webhook-id']}.{got.headers['webhook-timestamp']}.".encode() + got.body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
