"""A receiver that answers one byte at a time: a real TCP server on
127.0.0.1 that reads each request whole, then sends its answer with a
pause before every byte (from the status line on, or from the body on),
and records each request's `webhook-id`, when it came (Unix seconds),
and how many requests it held at once."""

from __future__ import annotations

import select
import socket
import threading
import time

ANSWER_HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"
ANSWER_BODY = b"ok"


class Trickle:
    def __init__(self, gap: float, headers_at_once: bool = False) -> None:
        self.gap = gap
        self.headers_at_once = headers_at_once  # then only the body trickles
        self.ids: list[str] = []
        self.times: list[float] = []
        self.open = 0
        self.most_open = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.1)
        self.port = self.server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            head, body = self._read_request(conn)
            if head is None:
                return
            with self._lock:
                self.ids.append(_header(head, "webhook-id"))
                self.times.append(time.time())
                self.open += 1
                self.most_open = max(self.most_open, self.open)
            try:
                answer = ANSWER_HEAD + ANSWER_BODY
                start = len(ANSWER_HEAD) if self.headers_at_once else 0
                if start:
                    conn.sendall(answer[:start])
                for i in range(start, len(answer)):
                    if self._closed_during_gap(conn):
                        return
                    conn.sendall(answer[i:i + 1])
            except OSError:  # the sender gave up and closed: what a deadline does
                pass
            finally:
                with self._lock:
                    self.open -= 1

    def _closed_during_gap(self, conn: socket.socket) -> bool:
        """Wait `gap` seconds; True as soon as the sender closes the
        connection (so `open` counts what the sender still holds)."""
        ends = time.monotonic() + self.gap
        while (left := ends - time.monotonic()) > 0 and not self._stop.is_set():
            readable, _, _ = select.select([conn], [], [], min(left, 0.1))
            if readable and not conn.recv(1024):
                return True
        return self._stop.is_set()

    @staticmethod
    def _read_request(conn: socket.socket) -> tuple[bytes | None, bytes]:
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return None, b""
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(_header(head, "content-length") or 0)
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                body += chunk
        except OSError:
            return None, b""
        return head, body

    def close(self) -> None:
        self._stop.set()
        self.server.close()


def _header(head: bytes, name: str) -> str:
    for line in head.decode("latin-1").split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name:
            return value.strip()
    return ""
