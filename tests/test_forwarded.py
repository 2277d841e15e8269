"""The client address behind `[server] proxy_hops` trusted proxies: the
entry the outermost trusted proxy appended to X-Forwarded-For, never one
the client wrote."""

from __future__ import annotations

import logging

import pytest

from quire import forwarded
from quire.forwarded import client_address, normalise

PEER = "192.168.0.10"  # the nearest proxy


def test_zero_hops_is_the_peer_whatever_the_header_says() -> None:
    assert client_address(PEER, ["203.0.113.5"], 0) == PEER
    assert client_address(PEER, [], 0) == PEER


def test_one_hop_takes_the_entry_the_proxy_appended_not_the_clients() -> None:
    # the client sent "X-Forwarded-For: 1.2.3.4", the proxy appended its peer
    assert client_address(PEER, ["1.2.3.4, 203.0.113.5"], 1) == "203.0.113.5"
    assert client_address(PEER, ["203.0.113.5"], 1) == "203.0.113.5"
    for spoof in ("1.2.3.4", "1.2.3.4, 5.6.7.8", "unknown", "", "203.0.113.5, ::1"):
        header = f"{spoof}, 198.51.100.7" if spoof else "198.51.100.7"
        assert client_address(PEER, [header], 1) == "198.51.100.7"


def test_two_hops_take_the_second_entry_from_the_right() -> None:
    # client -> outer proxy (appends the client) -> inner proxy (appends the outer proxy) -> Quire
    assert client_address(PEER, ["1.2.3.4, 203.0.113.5, 10.0.0.2"], 2) == "203.0.113.5"
    assert client_address(PEER, ["9.9.9.9, 1.2.3.4, 203.0.113.5, 10.0.0.2"], 2) == "203.0.113.5"


def test_several_header_lines_are_one_list_in_order() -> None:
    assert client_address(PEER, ["1.2.3.4", "203.0.113.5"], 1) == "203.0.113.5"
    assert client_address(PEER, ["1.2.3.4, 5.6.7.8", "203.0.113.5, 10.0.0.2"], 2) == "203.0.113.5"
    assert client_address(PEER, ["1.2.3.4", "203.0.113.5", "10.0.0.2"], 2) == "203.0.113.5"


def test_no_header_is_the_peer() -> None:
    assert client_address(PEER, [], 1) == PEER
    assert client_address(PEER, ["", " , "], 1) == PEER


def test_fewer_entries_than_hops_is_the_leftmost_entry() -> None:
    # every entry came from a trusted proxy: the request entered behind the outermost one
    assert client_address(PEER, ["203.0.113.5"], 2) == "203.0.113.5"
    assert client_address(PEER, ["203.0.113.5, 10.0.0.2"], 3) == "203.0.113.5"


def test_empty_entries_written_by_the_client_do_not_shift_the_count() -> None:
    assert client_address(PEER, [", ,1.2.3.4,, 203.0.113.5"], 1) == "203.0.113.5"


def test_an_entry_that_is_no_address_falls_back_to_the_peer(caplog: pytest.LogCaptureFixture,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forwarded, "_warned", False)
    with caplog.at_level(logging.WARNING, "quire.forwarded"):
        assert client_address(PEER, ["1.2.3.4, unknown"], 1) == PEER
        assert client_address(PEER, ["1.2.3.4, _hidden"], 1) == PEER
        assert client_address(PEER, ["1.2.3.4, 203.0.113.5, not-an-ip"], 2) == "203.0.113.5"  # only the chosen one
    warnings = [r for r in caplog.records if r.name == "quire.forwarded"]
    assert len(warnings) == 1 and "unknown" in warnings[0].getMessage()  # once per process


def test_addresses_are_normalised() -> None:
    assert client_address(PEER, ["203.0.113.5:51234"], 1) == "203.0.113.5"
    assert client_address(PEER, ["[2001:DB8:0:0::1]:443"], 1) == "2001:db8::1"
    assert client_address(PEER, ["2001:db8:0000::1"], 1) == "2001:db8::1"
    assert client_address(PEER, ["::ffff:203.0.113.5"], 1) == "203.0.113.5"
    assert client_address("::ffff:192.168.0.10", [], 1) == PEER


def test_a_peer_that_is_no_address_is_kept_as_it_is() -> None:
    assert client_address("testclient", [], 0) == "testclient"
    assert client_address(None, [], 0) == "unknown"
    assert client_address(None, ["203.0.113.5"], 1) == "203.0.113.5"


@pytest.mark.parametrize("text", ["", "unknown", "1.2.3", "1.2.3.4.5", "[::1", "300.1.1.1", "a:b:c", "1.2.3.4:x:y", "1.2.3.4:", "[::1]x", "[::1]:", "1.2.3.4:８０"])
def test_normalise_refuses_what_is_no_address(text: str) -> None:
    assert normalise(text) is None
