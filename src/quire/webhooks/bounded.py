"""One overall deadline for an HTTP exchange, not a timeout per operation.

A timeout per operation lets a receiver that sends one byte of its status
line every two seconds never trip a three-second read timeout, and hold a
delivery for as long as it likes. Here every wait of a connection (the
connect, the TLS handshake, each send and each receive) waits at most the
time left until the deadline of the thread sending the request (`within`),
and fails with `TimedOut` once it has passed; connections kept between
deliveries read the deadline of the request using them now.

HTTP itself is the standard library's `http.client` (request framing,
status line, headers, chunked bodies), over a socket of ours that bounds
its waits (`_Bounded`). It replaced httpx for deliveries: the same
exchange costs about 60% of the CPU (230–290 against 380–490 µs a
delivery, measured alone), and a server's workers send one per save of a
followed model.

`lookup` bounds name resolution the same way: `socket.getaddrinfo` has no
timeout of its own, so it runs in a thread of its own that is waited for
at most the time left (and abandoned after it)."""

from __future__ import annotations

import contextlib
import http.client
import io
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any

_current = threading.local()  # .deadline: time.monotonic() seconds, or None; .phase: what is waited for

AddressInfo = tuple[Any, ...]

CONNECTING, SENDING, READING = "connecting", "sending the request", "reading the answer"


class TimedOut(TimeoutError):
    """The exchange did not end before its deadline (connecting, sending or
    reading the answer, or resolving the host)."""


class BadAnswer(ConnectionError):
    """The receiver's answer is not HTTP/1.1 as it should be (a broken
    status line, a header line too long, a body cut short)."""


@contextlib.contextmanager
def within(deadline: float) -> Iterator[None]:
    """Let every socket operation of this thread end by `deadline`
    (a `time.monotonic()` value)."""
    previous = getattr(_current, "deadline", None)
    _current.deadline = deadline
    try:
        yield
    finally:
        _current.deadline = previous


def phase() -> str:
    """What this thread's exchange waited for last (for a timeout's message)."""
    return getattr(_current, "phase", READING)


def time_left(step: str) -> float | None:
    """The wait an operation of `step` may take: the time left before this
    thread's deadline (None: no deadline); raises `TimedOut` once it passed."""
    _current.phase = step
    deadline = getattr(_current, "deadline", None)
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimedOut("the deadline passed")
    return left


def lookup(host: str, port: int, timeout: float) -> list[AddressInfo]:
    """`socket.getaddrinfo(host, port)` for TCP, or `TimedOut` after
    `timeout` seconds (the lookup thread is left to end on its own)."""
    found: list[AddressInfo] = []
    failed: list[BaseException] = []
    done = threading.Event()

    def resolve() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except BaseException as exc:  # handed to the waiting thread
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=resolve, name="quire-webhook-lookup", daemon=True).start()
    if not done.wait(max(timeout, 0.0)):
        raise TimedOut(f"timed out after {timeout:g} s (resolving {host})")
    if failed:
        raise failed[0]
    return found


class _Bounded:
    """What `http.client` asks of a socket (`sendall`, `makefile`,
    `close`), every wait cut to the time left before the deadline. The
    socket closes once the connection and the answer being read both let
    go of it, as a socket's own `makefile` does."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._readers = 0
        self._closed = False

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            # each send waits at most the time left: a receiver that reads
            # a byte at a time cannot stretch the whole write
            self.sock.settimeout(time_left(SENDING))
            sent = self.sock.send(view)
            view = view[sent:]

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        self._readers += 1
        return io.BufferedReader(_Reader(self))

    def close(self) -> None:
        self._closed = True
        if not self._readers:
            self.sock.close()

    def reader_closed(self) -> None:
        self._readers -= 1
        if self._closed and not self._readers:
            self.sock.close()


class _Reader(io.RawIOBase):
    def __init__(self, bounded: _Bounded) -> None:
        self._bounded = bounded

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        sock = self._bounded.sock
        sock.settimeout(time_left(READING))
        return sock.recv_into(buffer)

    def close(self) -> None:
        if not self.closed:
            self._bounded.reader_closed()
        super().close()


class Connection(http.client.HTTPConnection):
    """An HTTP/1.1 connection to a checked address (TLS with the URL's
    host as server name when `tls` is given), bounded by the deadline."""

    def __init__(self, address: str, port: int, tls: ssl.SSLContext | None, server_name: str | None) -> None:
        super().__init__(address, port)
        self.address, self.tls, self.server_name = address, tls, server_name
        self.used = time.monotonic()  # when an exchange last ended on it

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), time_left(CONNECTING))
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                # the handshake as a whole waits at most this (CPython keeps
                # one deadline across its reads and writes)
                sock.settimeout(time_left(CONNECTING))
                sock = self.tls.wrap_socket(sock, server_hostname=self.server_name)
        except BaseException:
            sock.close()
            raise
        self.sock = _Bounded(sock)

    def idle_and_open(self) -> bool:
        """Whether a kept connection can carry another request: open, and
        nothing to read while idle (readable means the receiver closed it,
        or sent something unasked)."""
        bounded = self.sock
        if not isinstance(bounded, _Bounded):
            return False
        poller = select.poll()
        poller.register(bounded.sock, select.POLLIN | select.POLLERR | select.POLLHUP)
        return not poller.poll(0)

    def post(self, path: str, headers: dict[str, str], body: bytes, limit: int) -> tuple[int, bytes, bool]:
        """POST `body`: the status, at most `limit` bytes of the answer's
        body, and whether the connection may carry another request."""
        try:
            self.request("POST", path, body=body, headers=headers)
            response = self.getresponse()
            read = response.read(limit)
        except http.client.HTTPException as exc:
            if isinstance(exc, ConnectionError):  # RemoteDisconnected: closed before answering
                raise
            raise BadAnswer(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None
        finished = response.isclosed() and not response.will_close  # the whole answer read, kept alive
        response.close()
        self.used = time.monotonic()
        return response.status, read, finished
