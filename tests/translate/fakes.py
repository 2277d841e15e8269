"""Local stand-ins for the translation providers, speaking their documented
protocols on 127.0.0.1: DeepL's `POST /v2/translate` (JSON, `Authorization:
DeepL-Auth-Key`) and LibreTranslate's `POST /translate` (`q` a list). A
translation is the text with the target in front (`[DE] Hello`, HTML kept
as sent); `mode` makes the server misbehave: "hang", "garbage", "short"
(one translation too few), "refuse" (403)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeProvider(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, key: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.key = key
        self.mode = "ok"
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeProvider

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        self.server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("authorization")})
        mode = self.server.mode
        if mode == "hang":
            time.sleep(5)
        if mode == "refuse":
            return self._send(403, {"message": "Forbidden"})
        if mode == "garbage":
            return self._send(200, b"<html>not json</html>")
        if self.path == "/v2/translate":
            if self.headers.get("authorization") != f"DeepL-Auth-Key {self.server.key}":
                return self._send(403, {"message": "Wrong key"})
            texts, target = body.get("text"), body.get("target_lang")
            if not isinstance(texts, list) or not target:
                return self._send(400, {"message": "Parameter 'text' or 'target_lang' missing"})
            out = [{"detected_source_language": body.get("source_lang", "EN"), "text": f"[{target}] {t}"}
                   for t in texts]
            return self._send(200, {"translations": out[:-1] if mode == "short" else out})
        if self.path == "/translate":
            if body.get("api_key") != self.server.key:
                return self._send(403, {"error": "Invalid API key"})
            texts, target = body.get("q"), body.get("target")
            out = [f"[{str(target).upper()}] {t}" for t in texts]
            return self._send(200, {"translatedText": out[:-1] if mode == "short" else out})
        self._send(404, {"error": "Not found"})

    def _send(self, status: int, body: Any) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (a hang test)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def fake_provider(key: str = "test-key") -> Iterator[FakeProvider]:
    server = FakeProvider(key)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
