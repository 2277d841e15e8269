"""One overall deadline for an HTTP exchange, not a timeout per operation.

httpx bounds each connect, write and read on its own, so a receiver that
sends one byte of its status line every two seconds never trips a
three-second read timeout, and holds a delivery for as long as it likes.
Here the sockets are made by a network backend of our own (`Backend`):
each connect, TLS handshake, send and receive waits at most
`min(the operation's timeout, the time left until the deadline)` and fails
with a timeout once the deadline has passed. The deadline belongs to the
thread sending the request (`within`), since the connection pool hands a
kept connection to whichever request comes next: a stream reads the
deadline of the request using it now, not the one that opened it.

`lookup` bounds name resolution the same way: `socket.getaddrinfo` has no
timeout of its own, so it runs in a thread of its own that is waited for
at most the time left (and abandoned after it)."""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore2
import httpx2

_current = threading.local()  # .deadline: time.monotonic() seconds, or None

AddressInfo = tuple[Any, ...]


class TimedOut(httpx2.TimeoutException):
    """The exchange did not end before its deadline (connecting, sending or
    reading the answer, or resolving the host)."""


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


def time_left(timeout: float | None, expired: type[Exception]) -> float | None:
    """The wait an operation may take: its own timeout, cut to the time
    left before this thread's deadline; raises `expired` once it passed."""
    deadline = getattr(_current, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the deadline passed")
    return left if timeout is None else min(timeout, left)


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


@contextlib.contextmanager
def _mapped(timed_out: type[Exception], broken: type[Exception]) -> Iterator[None]:
    try:
        yield
    except TimeoutError as exc:  # socket.timeout
        raise timed_out(str(exc) or "timed out") from exc
    except OSError as exc:
        raise broken(str(exc)) from exc


class Stream(httpcore2.NetworkStream):
    """A connected socket whose every wait ends by the deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore2.ReadTimeout, httpcore2.ReadError):
            self._sock.settimeout(time_left(timeout, httpcore2.ReadTimeout))
            return self._sock.recv(max_bytes)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        with _mapped(httpcore2.WriteTimeout, httpcore2.WriteError):
            while view:
                # each send waits at most the time left: a receiver that
                # reads a byte at a time cannot stretch the whole write
                self._sock.settimeout(time_left(timeout, httpcore2.WriteTimeout))
                sent = self._sock.send(view)
                view = view[sent:]

    def close(self) -> None:
        self._sock.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        try:
            with _mapped(httpcore2.ConnectTimeout, httpcore2.ConnectError):
                # the handshake as a whole waits at most this (CPython keeps
                # one deadline across its reads and writes)
                self._sock.settimeout(time_left(timeout, httpcore2.ConnectTimeout))
                wrapped = ssl_context.wrap_socket(self._sock, server_hostname=server_hostname)
        except BaseException:
            self.close()
            raise
        return Stream(wrapped)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            # what httpcore asks of it (`selected_alpn_protocol`) the SSL
            # socket answers itself
            return self._sock if isinstance(self._sock, ssl.SSLSocket) else None
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        if info == "is_readable":
            # a kept connection that is readable while idle was closed by
            # the other side (or sent something unasked): not reused
            poller = select.poll()
            poller.register(self._sock, select.POLLIN | select.POLLERR | select.POLLHUP)
            return bool(poller.poll(0))
        return None


class Backend(httpcore2.NetworkBackend):
    """Connections for httpcore's pool, bounded by the thread's deadline."""

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        source = None if local_address is None else (local_address, 0)
        with _mapped(httpcore2.ConnectTimeout, httpcore2.ConnectError):
            # `host` is the checked address itself: nothing is resolved here
            sock = socket.create_connection((host, port), time_left(timeout, httpcore2.ConnectTimeout),
                                            source_address=source)
            for option in socket_options or ():
                sock.setsockopt(*option)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return Stream(sock)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        raise httpcore2.ConnectError("webhooks are sent over TCP only")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class Transport(httpx2.HTTPTransport):
    """httpx's transport over `Backend`: the same request and answer
    handling, with the sockets bounded by the thread's deadline."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(trust_env=False)
        # HTTPTransport takes no network backend, so its pool is made again
        # with ours (the same defaults otherwise); tests/webhooks pin that a
        # trickling receiver is cut off, which this depends on. The default
        # context checks certificates against the system's CAs (tests give
        # one trusting their own).
        context = ssl_context or httpx2.create_ssl_context(trust_env=False)
        self._pool = httpcore2.ConnectionPool(ssl_context=context,
                                              max_connections=100, max_keepalive_connections=20,
                                              keepalive_expiry=5.0, network_backend=Backend())
