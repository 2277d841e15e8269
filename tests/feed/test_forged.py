"""10,000 reconnects to the change stream with forged Last-Event-IDs, at the
ASGI level in one event loop: each gets its `resync` event and goes; none
leaves a subscriber, a count or a task behind, and a real reader on the
same worker still gets every change."""

from __future__ import annotations

import random
import time
from typing import Any

import anyio
import pytest

from quire.app import Quire
from quire.feed.stream import Hub
from tests.conftest import put_model
from tests.streams import open_stream

RECONNECTS = 10_000


def _forged(rng: random.Random, latest: int) -> bytes:
    kinds = [
        lambda: str(latest + rng.randint(1, 10**12)),  # ahead of the log
        lambda: "-" + str(rng.randint(1, 10**6)),  # negative
        lambda: "".join(rng.choice("0123456789") for _ in range(rng.randint(19, 60))),  # too long a number
        lambda: "".join(rng.choice("abcdefxyz:/-_%") for _ in range(rng.randint(1, 40))),  # not a number
        lambda: "1e9",
        lambda: " " + str(latest),  # padded
        lambda: "\u0661",  # a digit to Python (Arabic-Indic one), not to the feed
    ]
    return rng.choice(kinds)().encode("utf-8")


@pytest.mark.anyio
async def test_ten_thousand_forged_reconnects_each_get_a_resync_and_leave_nothing(
        app: Any, quire: Quire, admin: Any, admin_key: str) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    admin.post("/api/content/item/posts", json={"data": {"title": "first", "_state": 1}})
    hub = quire.get(Hub)
    latest = hub.log.latest()
    rng = random.Random(37)
    headers = [(b"api-key", admin_key.encode()), (b"accept", b"text/event-stream")]
    started = time.monotonic()
    async with open_stream(app, "/api/content/changes", headers, b"models=posts") as reader:
        assert (await reader.chunk()).startswith(b"retry:")
        for _ in range(RECONNECTS):
            forged = _forged(rng, latest)
            async with open_stream(app, "/api/content/changes", [*headers, (b"last-event-id", forged)],
                                   b"models=posts") as stream:
                assert stream.start["status"] == 200, forged
                assert (await stream.chunk()).startswith(b"retry:")
                resync = await stream.chunk()
                assert b"event: resync" in resync and b"Last-Event-ID" in resync, (forged, resync)
        elapsed = time.monotonic() - started
        with anyio.fail_after(10):
            while len(hub.subscribers) > 1:  # the reader's own; the others closed as they went
                await anyio.sleep(0.01)
        # the reader on the same worker still gets what happens next
        admin.post("/api/content/item/posts", json={"data": {"title": "after the flood", "_state": 1}})
        with anyio.fail_after(10):
            got = b""
            while b"after the flood" not in got:
                got += await reader.chunk()
    assert len(hub.subscribers) == 0
    print(f"{RECONNECTS} forged reconnects in {elapsed:.1f} s")
