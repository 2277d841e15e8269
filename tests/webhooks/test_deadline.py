"""One deadline for a whole delivery attempt: a receiver that trickles its
status line, headers or body one byte at a time is cut off at
`timeout_seconds`, and so is a host name that takes too long to resolve."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from quire.webhooks.bounded import TimedOut
from quire.webhooks.deliver import Policy, Sender
from tests.webhooks.trickle import Trickle


@pytest.fixture
def sender() -> Iterator[Sender]:
    made = Sender(Policy.of(False, ["127.0.0.1", "slow.example"]), 1.0)
    yield made
    made.close()


def post_timed(sender: Sender, url: str) -> float:
    started = time.monotonic()
    with pytest.raises(TimedOut) as raised:
        sender.post(url, {"webhook-id": "msg_1"}, b"{}")
    assert str(raised.value).startswith("timed out after 1 s")
    return time.monotonic() - started


def test_a_receiver_trickling_its_status_line_is_cut_off_at_the_timeout(sender: Sender) -> None:
    trickle = Trickle(gap=0.3)  # each read gets a byte well within the 1 s timeout of one operation
    try:
        elapsed = post_timed(sender, trickle.url)
    finally:
        trickle.close()
    # 40 bytes at 0.3 s would take 12 s; the bound is generous for a loaded machine
    assert 0.95 <= elapsed < 2.5


def test_a_receiver_trickling_its_body_is_cut_off_at_the_timeout(sender: Sender) -> None:
    trickle = Trickle(gap=0.7, headers_at_once=True)
    try:
        elapsed = post_timed(sender, trickle.url)
    finally:
        trickle.close()
    assert 0.95 <= elapsed < 2.5


def test_a_prompt_receiver_is_answered_through_the_bounded_transport(sender: Sender) -> None:
    trickle = Trickle(gap=0.0)
    try:
        answers = [sender.post(trickle.url, {"webhook-id": f"msg_{n}"}, b"{}") for n in range(3)]
    finally:
        trickle.close()
    assert [(a.status, a.body) for a in answers] == [(200, "ok")] * 3
    assert trickle.ids == ["msg_0", "msg_1", "msg_2"]


def test_resolving_a_host_counts_toward_the_deadline(sender: Sender, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_lookup(*args: Any, **kwargs: Any) -> Any:
        time.sleep(3)
        raise socket.gaierror("too late")

    monkeypatch.setattr(socket, "getaddrinfo", slow_lookup)
    started = time.monotonic()
    with pytest.raises(TimedOut, match=r"timed out after 1 s \(resolving slow.example\)"):
        sender.post("http://slow.example/hook", {}, b"{}")
    assert time.monotonic() - started < 2.5
