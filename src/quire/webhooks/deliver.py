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

import ipaddress
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx2

from quire.webhooks.bounded import TimedOut, Transport, lookup, within

MAX_ANSWER_BYTES = 64 * 1024  # read of an answer's body, kept for the log up to MAX_LOGGED
MAX_LOGGED = 1000
USER_AGENT = "Quire-Webhooks/1"
MAX_CLIENTS = 64  # receivers whose connections are kept

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


class Sender:
    """Sends webhook requests; one per process, used by the jobs runner."""

    def __init__(self, policy: Policy, timeout: float) -> None:
        self.policy = policy
        self.timeout = timeout
        # A client per URL host keeps connections to a receiver between
        # deliveries; requests name the address, so one shared pool could
        # send a request for one host over a TLS connection made for
        # another that has the same address.
        self._clients: OrderedDict[str, httpx2.Client] = OrderedDict()
        self._lock = threading.Lock()  # several deliveries run at once (`[webhooks] concurrency`)

    def _client(self, host: str) -> httpx2.Client:
        with self._lock:
            client = self._clients.pop(host, None)
            if client is None:
                client = httpx2.Client(follow_redirects=False, trust_env=False, transport=Transport(),
                                       timeout=httpx2.Timeout(self.timeout), headers={"user-agent": USER_AGENT})
                while len(self._clients) >= MAX_CLIENTS:
                    # a request still using it ends with an error, retried
                    self._clients.popitem(last=False)[1].close()
            self._clients[host] = client  # the most recently used last
            return client

    def close(self) -> None:
        with self._lock:
            while self._clients:
                self._clients.popitem()[1].close()

    def post(self, url: str, headers: dict[str, str], body: bytes) -> Answer:
        """POST `body` to `url` at its checked address, the whole exchange
        within `timeout` seconds. Raises `Refused` for an address that may
        not be called (before connecting), `TimedOut` past the deadline,
        OSError or httpx errors for other transport failures."""
        started = time.monotonic()
        deadline = started + self.timeout
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        address = resolve(host, port, self.policy, self.timeout)
        shown = f"[{address}]" if address.version == 6 else str(address)
        target = urlunsplit((parts.scheme, f"{shown}:{port}", parts.path or "/", parts.query, ""))
        host_header = host if parts.port is None else f"{host}:{port}"
        if ":" in host and not host_header.startswith("["):
            host_header = f"[{host}]" if parts.port is None else f"[{host}]:{port}"
        extensions = {"sni_hostname": host} if parts.scheme == "https" and literal_address(host) is None else {}
        client = self._client(host)
        request = client.build_request("POST", target, content=body, extensions=extensions,
                                             headers={**headers, "host": host_header})
        read = bytearray()
        try:
            with within(deadline):
                response = client.send(request, stream=True)
                try:
                    for chunk in response.iter_bytes():
                        read += chunk
                        if len(read) >= MAX_ANSWER_BYTES:
                            break
                finally:
                    response.close()
        except httpx2.TimeoutException as exc:
            raise TimedOut(f"timed out after {self.timeout:g} s ({_phase(exc)})") from None
        elapsed = round((time.monotonic() - started) * 1000)
        return Answer(response.status_code, elapsed, bytes(read[:MAX_LOGGED * 4]).decode("utf-8", "replace")[:MAX_LOGGED])


def _phase(exc: httpx2.TimeoutException) -> str:
    """What the attempt was doing when its time ran out, for the log."""
    if isinstance(exc, httpx2.ConnectTimeout):
        return "connecting"
    if isinstance(exc, httpx2.WriteTimeout):
        return "sending the request"
    if isinstance(exc, httpx2.PoolTimeout):
        return "waiting for a connection"
    return "reading the answer"
