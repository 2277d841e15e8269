"""The client address of a request behind `[server] proxy_hops` trusted
proxies.

Each proxy that appends to `X-Forwarded-For` adds the address it received
the request from, at the right end. Everything left of what the trusted
proxies added was sent by the client and proves nothing, so the address is
the `proxy_hops`-th entry counted from the right: with one proxy, the last
entry; with two, the one before it. Several header lines count as one list,
joined in order.

Safe fallbacks, so that no choice of header moves a client to an address of
its liking:

- no header, or `proxy_hops = 0`: the peer (the TCP connection's address);
- fewer entries than hops: the leftmost entry (every entry then came from a
  trusted proxy; the request entered behind the outermost one);
- the chosen entry is not an IP address (`unknown`, an obfuscated name):
  the peer, that is the nearest proxy, which then stands for all such
  clients together.

Addresses are normalised (`::FFFF:10.0.0.1` is `10.0.0.1`, IPv6 in its short
form), so one client has one spelling for the rate limits.
"""

from __future__ import annotations

import contextvars
import ipaddress
import logging
from collections.abc import Iterable, Mapping
from typing import Any

log = logging.getLogger("quire.forwarded")

MAX_PROXY_HOPS = 16
_warned = False

# The ASGI scope of the request being answered (set by the dispatcher), so
# code far below the routes (the audit log's event handlers) can tell which
# client caused a write without every service passing the request along.
# A context variable: each request runs in its own task; commands and the
# jobs runner see None.
serving: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar("quire_serving", default=None)


def current_client(proxy_hops: int) -> str | None:
    """The client address of the request being answered, or None outside
    of one (the command line, a job)."""
    scope = serving.get()
    if scope is None:
        return None
    peer = scope.get("client")
    lines = [value.decode("latin-1") for name, value in scope.get("headers", ()) if name == b"x-forwarded-for"]
    return client_address(peer[0] if peer else None, lines, proxy_hops)


def client_address(peer: str | None, forwarded_for: Iterable[str], proxy_hops: int) -> str:
    """The client's address from the connection's `peer` and the
    `X-Forwarded-For` header lines, trusting `proxy_hops` proxies."""
    fallback = normalise(peer) or peer or "unknown"
    if proxy_hops <= 0:
        return fallback
    entries = [part.strip() for line in forwarded_for for part in line.split(",")]
    entries = [entry for entry in entries if entry]
    if not entries:
        return fallback
    chosen = entries[-proxy_hops] if len(entries) >= proxy_hops else entries[0]
    address = normalise(chosen)
    if address is None:
        _warn_once(chosen)
        return fallback
    return address


def normalise(text: str | None) -> str | None:
    """`text` as an IP address in its canonical spelling, or None when it is
    not one. A port is dropped (`1.2.3.4:80`, `[2001:db8::1]:80`)."""
    if not text:
        return None
    text = text.strip()
    port = None
    if text.startswith("["):  # [IPv6] or [IPv6]:port
        text, bracket, rest = text[1:].partition("]")
        if not bracket or rest[:1] not in ("", ":"):
            return None
        port = rest[1:] if rest else None
    elif text.count(":") == 1:  # IPv4:port
        text, _, port = text.partition(":")
    if port is not None and not (port.isascii() and port.isdigit()):
        return None
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def _warn_once(entry: str) -> None:
    # Once per process: the proxy writes something other than an address
    # (or proxy_hops counts more proxies than there are); say so, not per request.
    global _warned
    if not _warned:
        _warned = True
        log.warning("X-Forwarded-For entry %r at [server] proxy_hops is not an IP address; "
                    "using the peer address instead (check proxy_hops and the proxy)", entry[:64])
