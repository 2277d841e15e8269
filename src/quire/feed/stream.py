"""Server-Sent Events of the change feed, one hub per worker process.

The hub reads the change log once per tick for all of its subscribers
(`[feed] poll_ms`), whichever instance made the change, and hands each
subscriber the changes of its view; subscribers with the same view share
one read of the items. A subscriber that reconnects with `Last-Event-ID`
first reads what it missed from the log, then the hub's changes after
what it read, so nothing is sent twice or left out.

Memory is bounded: each subscriber's queue holds at most `[feed] queue`
messages. One that does not read (its socket's buffers are full) is
dropped when its queue is full: its stream ends and the browser's
EventSource reconnects with the id of the last change it received,
reading the rest from the log. The number of streams is capped per key
(or per client address without a key) and per worker."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from quire import metrics, stopping
from quire.errors import ApiError
from quire.feed.log import ChangeLog
from quire.feed.view import Readers, TooOld, View, changes, shown
from quire.ids import new_id
from quire.store import Collection

log = logging.getLogger("quire.feed")

BATCH = 500  # records read per tick
STREAMS = "system/streams"  # per hub and key: how many streams it holds
BEAT_SECONDS = 10.0  # a hub renews its counts this often
STALE_SECONDS = 30.0  # a count not renewed for this long is a stopped worker's
KEEPALIVE_SECONDS = 15.0
CHECK_SECONDS = 1.0  # how often a quiet stream asks whether its client is still there (`gone`)
STREAM_SECONDS = 3600.0  # a stream ends now and then (EventSource reconnects), so a vanished client is let go


class TooMany(ApiError):
    status = 429


@dataclass(eq=False)
class Subscriber:
    view: View
    who: str  # the key's id, or the client's address without a key
    queue: asyncio.Queue[bytes | None]
    through: int  # the number of the last change sent (or skipped as already read)
    dropped: bool = False


@dataclass
class Hub:
    readers: Readers
    log: ChangeLog
    poll_seconds: float
    queue_size: int
    per_key: int
    per_worker: int
    subscribers: set[Subscriber] = field(default_factory=set)
    position: int = -1  # the last record handed out; -1 before the first tick
    holder: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{new_id()[-6:]}")
    _task: asyncio.Task[None] | None = None
    _beat: float = 0.0

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def _mine(self, who: str) -> int:
        return sum(1 for s in self.subscribers if s.who == who)

    def check(self, who: str) -> None:
        """429 when another stream would be over a cap: the worker's, or
        the key's, counted over every worker and instance (`system/streams`:
        each hub's count per key, renewed while it holds streams)."""
        if len(self.subscribers) >= self.per_worker:
            raise TooMany("Too many change streams on this server; try again later")
        fresh = time.time() - STALE_SECONDS
        elsewhere = sum(int(d.get("n", 0)) for d in self.counts.find({"who": who, "seen": {"$gt": fresh}})
                        if d["_id"] != self._row(who)) if self.counts.exists() else 0
        if elsewhere + self._mine(who) >= self.per_key:
            raise TooMany(f"At most {self.per_key} change streams per key (or address) at a time")

    @property
    def counts(self) -> Collection:
        return self.log.store.collection(STREAMS)

    def _row(self, who: str) -> str:
        return f"{self.holder}|{who}"

    async def publish(self, *whos: str) -> None:
        """Store this hub's count of streams of each key (dropping a zero)."""
        store = self.log.store
        try:
            async with store.atomic():
                store.ensure_table(STREAMS)
                for who in whos:
                    count = self._mine(who)
                    if count:
                        self.counts.replace({"_id": self._row(who), "who": who, "n": count, "seen": time.time()})
                    else:
                        self.counts.delete(self._row(who))
        except Exception:  # a busy store: the count is renewed on the next beat
            log.warning("could not record the change streams' count", exc_info=True)

    def caught_up(self) -> int:
        """The number a new subscriber must have read through before it
        joins: what the hub has handed out, or the log's last when idle."""
        return self.position if self.running else self.log.latest()

    def open(self, view: View, who: str, through: int) -> Subscriber:
        """Join a subscriber that has read every change through `through`
        (no await between its catching up and this call)."""
        self.check(who)
        subscriber = Subscriber(view, who, asyncio.Queue(self.queue_size), through)
        self.subscribers.add(subscriber)
        metrics.STREAMS.inc()
        asyncio.get_running_loop().create_task(self.publish(who))
        if not self.running:
            self.position = through  # the hub reads on from what this one has
            self._task = asyncio.get_running_loop().create_task(self._run())
        return subscriber

    def close(self, subscriber: Subscriber) -> None:
        if subscriber in self.subscribers:
            self.subscribers.discard(subscriber)
            metrics.STREAMS.dec()
            with contextlib.suppress(RuntimeError):  # no loop: the process is ending, its rows go stale
                asyncio.get_running_loop().create_task(self.publish(subscriber.who))

    async def _run(self) -> None:
        """Tick while anyone listens: read new records, hand them out."""
        while self.subscribers:
            try:
                await self.tick()
            except Exception:  # a store outage: the streams wait, they do not end
                log.exception("reading the change log failed; trying again")
            if time.monotonic() - self._beat > BEAT_SECONDS:
                self._beat = time.monotonic()
                await self.publish(*{s.who for s in self.subscribers})
            await asyncio.sleep(self.poll_seconds)
        self._task = None

    async def tick(self) -> None:
        top = self.log.latest()
        if top <= self.position:
            return
        records = [r for r in self.log.after(self.position, BATCH) if r["seq"] <= top]
        self.position = records[-1]["seq"] if len(records) == BATCH else top
        if not records:
            return
        groups: dict[bytes, list[Subscriber]] = {}
        for subscriber in list(self.subscribers):
            groups.setdefault(subscriber.view.key, []).append(subscriber)
        for members in groups.values():
            view = members[0].view
            wanted = [r for r in records if r["model"] in view.models]
            sent = shown(self.readers, view, wanted) if wanted else []
            for subscriber in members:
                for change in sent:
                    if change["seq"] > subscriber.through:
                        self._put(subscriber, message(change))
                subscriber.through = max(subscriber.through, self.position)

    def _put(self, subscriber: Subscriber, data: bytes) -> None:
        try:
            subscriber.queue.put_nowait(data)
        except asyncio.QueueFull:
            # it does not read: let it go; it reconnects from its last id
            subscriber.dropped = True
            self.close(subscriber)
            with contextlib.suppress(asyncio.QueueFull):
                subscriber.queue.get_nowait()
                subscriber.queue.put_nowait(None)


def message(change: dict[str, Any]) -> bytes:
    return b"id: " + str(change["seq"]).encode() + b"\ndata: " + orjson.dumps(change) + b"\n\n"


def resync(reason: str, seq: int) -> bytes:
    """Tell the client its position cannot be continued: read everything
    again (the pull API's `since=0`), then go on from `seq`."""
    return b"id: " + str(seq).encode() + b"\nevent: resync\ndata: " + \
        orjson.dumps({"error": reason, "next": str(seq)}) + b"\n\n"


async def stream(hub: Hub, view: View, who: str, last_id: str | None,
                 gone: Callable[[], Awaitable[bool]] | None = None) -> AsyncIterator[bytes]:
    """One subscriber's stream: what it missed since `last_id`, from the
    log, then the hub's live changes (the route checked the caps)."""
    yield b"retry: 1000\n: connected\n\n"
    latest = hub.log.latest()
    since = latest  # a new stream: the changes committed from now on
    if last_id is not None:
        asked = int(last_id) if last_id.isascii() and last_id.isdigit() and len(last_id) <= 18 else -1
        if 0 <= asked <= latest:
            since = asked
        else:
            yield resync("Last-Event-ID is not one this site gave", since)
    while since < (target := hub.caught_up()):
        try:
            missed, since = changes(hub.readers, hub.log, view, since, BATCH)
        except TooOld:
            since = target
            yield resync("the changes after Last-Event-ID are older than the feed keeps", since)
            continue
        for change in missed:
            yield message(change)
    try:
        subscriber = hub.open(view, who, since)  # no await since the loop's test: nothing slips between
    except TooMany as exc:  # filled up while this one caught up
        yield b"event: error\ndata: " + orjson.dumps({"error": exc.message}) + b"\n\n"
        return
    try:
        started = quiet = time.monotonic()
        while time.monotonic() - started < STREAM_SECONDS:
            try:
                data = await asyncio.wait_for(subscriber.queue.get(), CHECK_SECONDS)
            except TimeoutError:
                if stopping.under_way():
                    return  # the worker stops: the client reconnects to one that serves on
                if gone is not None and await gone():
                    return  # the client left: its stream stops counting at once
                if time.monotonic() - quiet > KEEPALIVE_SECONDS:
                    quiet = time.monotonic()
                    yield b": keep-alive\n\n"
                continue
            if data is None:
                return  # dropped as too slow: the client reconnects from its last id
            quiet = time.monotonic()
            yield data
    finally:
        hub.close(subscriber)
