"""Sending one webhook request, and the address rules that guard it (SSRF).

The host is resolved once and every address it has is checked before any
connection is made: private, loopback, link-local, shared, multicast,
reserved and unspecified ranges (and IPv6 forms that carry such an IPv4
address) are refused unless `[webhooks] allow_private` is on or the host or
address is in `allow_hosts`. The request then goes to the checked address
itself, with the URL's host in the `Host` header and as the TLS server name
(SNI and certificate check), so a DNS answer that changes between the check
and the connection (rebinding) cannot move it. Redirects are not followed,
proxies from the environment are not used, and at most `MAX_ANSWER_BYTES`
of the answer are read.

One deadline, `timeout` seconds from the start, bounds the whole attempt:
resolving, connecting, sending, and reading the status line, headers and
body (`bounded.py`); past it the attempt fails with `TimedOut`."""

from __future__ import annotations

import http.client
import ipaddress
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from quire.webhooks.bounded import Connection, TimedOut, lookup, phase, within

MAX_ANSWER_BYTES = 64 * 1024  # read of an answer's body, kept for the log up to MAX_LOGGED
MAX_LOGGED = 1000
USER_AGENT = "Quire-Webhooks/1"
MAX_CLIENTS = 64  # receivers whose connections are kept
MAX_KEPT = 8  # idle connections kept per receiver (a lane's threads send at once)
KEEP_SECONDS = 4.0  # an idle connection older than this is not used again (servers close theirs after ~5 s)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(Exception):
    """The URL's address may not be called (no connection was attempted)."""


@dataclass(frozen=True)
class Policy:
    allow_private: bool
    allow_hosts: frozenset[str]

    @classmethod
    def of(cls, allow_private: bool, allow_hosts: Iterable[str]) -> Policy:
        return cls(allow_private, frozenset(h.lower().strip("[]") for h in allow_hosts))

    def allows_host(self, host: str) -> bool:
        return host.lower().strip("[]") in self.allow_hosts

    def check_address(self, address: Address, host: str) -> None:
        """Refuse an address outside the public internet, unless allowed."""
        if self.allows_host(host) or self.allows_host(str(address)):
            return
        if not is_public(address) and not (self.allow_private and _private_but_routable(address)):
            raise Refused(f"{host} resolves to {address}, an address webhooks may not call "
                          "(private, loopback, link-local or reserved; see [webhooks] allow_hosts)")


def _embedded_v4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo, NAT64)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in ipaddress.IPv6Network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: Address) -> bool:
    """Whether an address is on the public internet (so a webhook may call it)."""
    inner = _embedded_v4(address)
    if inner is not None:
        return is_public(inner)
    return bool(address.is_global and not (address.is_multicast or address.is_reserved or address.is_unspecified
                                            or address.is_loopback or address.is_link_local or address.is_private))


def _private_but_routable(address: Address) -> bool:
    """What `allow_private` lets through: never unspecified or multicast."""
    inner = _embedded_v4(address) or address
    return not (inner.is_unspecified or inner.is_multicast)


def literal_address(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve(host: str, port: int, policy: Policy, timeout: float) -> Address:
    """The address to connect to: every address of `host`, checked; the
    first one answered. Raises `Refused` before any connection, `TimedOut`
    when resolving takes longer than `timeout` seconds."""
    literal = literal_address(host)
    if literal is not None:
        policy.check_address(literal, host)
        return literal
    try:
        infos = lookup(host, port, timeout)
    except TimedOut:
        raise
    except (OSError, UnicodeError) as exc:
        raise ConnectionError(f"cannot resolve {host}: {exc}") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not addresses:
        raise ConnectionError(f"{host} has no address")
    # Every address is checked, not just the first: a name answering a public
    # and a private address must not reach the private one on a later try.
    for address in addresses:
        policy.check_address(address, host)
    return addresses[0]


@dataclass(frozen=True)
class Answer:
    status: int
    milliseconds: int
    body: str  # the first MAX_LOGGED characters


Key = tuple[str, str, str, int]  # scheme, URL host, address, port


class Sender:
    """Sends webhook requests; one per process, used by the jobs runner's
    threads. Connections to a receiver are kept between deliveries (per
    URL host and address: a TLS connection is made for one host name, so
    it is never lent to another name that has the same address)."""

    def __init__(self, policy: Policy, timeout: float, tls: ssl.SSLContext | None = None) -> None:
        self.policy = policy
        self.timeout = timeout
        # the system's CAs check certificates (tests give one trusting their own)
        self.tls = tls or ssl.create_default_context()
        self._idle: OrderedDict[Key, list[Connection]] = OrderedDict()
        self._lock = threading.Lock()  # several deliveries run at once (`[webhooks] concurrency`)

    def _take(self, key: Key) -> Connection | None:
        """A kept connection for `key` that can carry a request, if any."""
        while True:
            with self._lock:
                kept = self._idle.get(key)
                if not kept:
                    return None
                connection = kept.pop()
                if not kept:
                    del self._idle[key]
            if time.monotonic() - connection.used < KEEP_SECONDS and connection.idle_and_open():
                return connection
            connection.close()

    def _keep(self, key: Key, connection: Connection) -> None:
        with self._lock:
            kept = self._idle.setdefault(key, [])
            self._idle.move_to_end(key)  # the most recently used last
            kept.append(connection)
            dropped = kept[:-MAX_KEPT]
            del kept[:-MAX_KEPT]
            while len(self._idle) > MAX_CLIENTS:
                dropped += self._idle.popitem(last=False)[1]
        for connection in dropped:
            connection.close()

    def close(self) -> None:
        with self._lock:
            kept = [c for connections in self._idle.values() for c in connections]
            self._idle.clear()
        for connection in kept:
            connection.close()

    def post(self, url: str, headers: dict[str, str], body: bytes) -> Answer:
        """POST `body` to `url` at its checked address, the whole exchange
        within `timeout` seconds. Raises `Refused` for an address that may
        not be called (before connecting), `TimedOut` past the deadline,
        OSError for other transport failures (`BadAnswer` for an answer
        that is not HTTP)."""
        started = time.monotonic()
        deadline = started + self.timeout
        parts = urlsplit(url)
        host = parts.hostname or ""
        tls = parts.scheme == "https"
        port = parts.port or (443 if tls else 80)
        address = resolve(host, port, self.policy, self.timeout)
        host_header = host if parts.port is None else f"{host}:{port}"
        if ":" in host and not host_header.startswith("["):
            host_header = f"[{host}]" if parts.port is None else f"[{host}]:{port}"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sent = {**headers, "host": host_header, "user-agent": USER_AGENT}
        key = (parts.scheme, host.lower(), str(address), port)
        connection = self._take(key)
        kept = connection is not None
        try:
            with within(deadline):
                while True:
                    if connection is None:
                        # the certificate is checked for the URL's host (a name,
                        # sent as SNI, or an address)
                        connection = Connection(str(address), port, self.tls if tls else None, host.strip("[]"))
                    try:
                        status, read, reusable = connection.post(path, sent, body, MAX_ANSWER_BYTES)
                        break
                    except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                        connection.close()
                        connection = None
                        if not kept:
                            raise
                        # a kept connection the receiver closed as the
                        # request left: once more on a new one (the same
                        # message id; receivers drop a duplicate)
                        kept = False
        except TimeoutError:
            if connection is not None:
                connection.close()
            raise TimedOut(f"timed out after {self.timeout:g} s ({phase()})") from None
        except BaseException:
            if connection is not None:
                connection.close()
            raise
        if reusable:
            self._keep(key, connection)
        else:
            connection.close()
        elapsed = round((time.monotonic() - started) * 1000)
        return Answer(status, elapsed, read[:MAX_LOGGED * 4].decode("utf-8", "replace")[:MAX_LOGGED])
