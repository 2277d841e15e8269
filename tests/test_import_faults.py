"""Faults an operator meets with `quire import` next to a running server
(`quire serve --workers 2`): a long import while the API is written and read,
and an import killed half-way and run again."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.ids import new_id
from tests.serving import quire_server

MODEL = {"name": "item", "type": "collection",
         "fields": [{"name": "title", "type": "text"}, {"name": "body", "type": "longtext"},
                    {"name": "n", "type": "number"}]}
INDEX = {"model": "item", "fields": ["title", "body"]}
IDS_ONLY = "?fields=" + urllib.parse.quote('{"_id":1}')


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: Any, seconds: float) -> None:
        self.status, self.headers, self.body, self.seconds = status, headers, body, seconds
        self.at = time.monotonic()  # when the answer came

    def __repr__(self) -> str:
        return f"<{self.status} {self.headers.get('retry-after')!r} {self.body!r:.200} {self.seconds:.2f}s>"


def _call(base: str, key: str, method: str, path: str, body: Any = None, timeout: float = 30) -> Answer:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("content-type", "application/json")
    request.add_header("api-key", key)
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw, status, headers = response.read(), response.status, response.headers
    except urllib.error.HTTPError as error:
        raw, status, headers = error.read(), error.code, error.headers
    except OSError as error:
        return Answer(0, {}, str(error), time.monotonic() - started)
    try:
        parsed: Any = json.loads(raw)
    except ValueError:
        parsed = raw
    return Answer(status, {k.lower(): v for k, v in headers.items()}, parsed, time.monotonic() - started)


def _bundle(path: Path, count: int) -> list[str]:
    """A bundle of `count` items of MODEL as `quire export` writes it; their ids in order."""
    now = int(time.time())
    items = [{"_id": new_id(), "title": f"bulk item {i}", "body": f"imported words number {i} " * 4,
              "n": i, "_state": 1, "_created": now, "_modified": now, "_cby": None, "_mby": None}
             for i in range(count)]
    path.write_text(json.dumps({"quire": 1, "models": [MODEL], "items": {"item": items}}))
    return [item["_id"] for item in items]


# `python -m quire ...` with Ctrl-C working as in a terminal: a suite started
# in the background (`make test &`, nohup) passes SIGINT on ignored, and
# Python then leaves it ignored in every process it starts.
INTERRUPTIBLE = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                 "sys.argv[0] = 'quire'; runpy.run_module('quire', run_name='__main__')")


def _import(data: Path, bundle: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", INTERRUPTIBLE, "import", "--data", str(data), str(bundle)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})


def _stored_ids(data: Path) -> list[str]:
    """The item ids in the database, in the order they were stored, read
    with a connection of our own (not through the server)."""
    conn = sqlite3.connect(f"file:{data / 'quire.db'}?mode=ro", uri=True, timeout=30)
    try:
        return [row[0] for row in conn.execute('SELECT id FROM "content/item" ORDER BY rowid')]
    finally:
        conn.close()


def _prepare(base: str, key: str) -> None:
    assert _call(base, key, "PUT", "/api/system/models/item", MODEL).status == 200
    assert _call(base, key, "PUT", "/api/searchmod/indexes/item", INDEX).status == 200


def _all_ids(base: str, key: str) -> list[str]:
    answer = _call(base, key, "GET", "/api/content/items/item" + IDS_ONLY, timeout=60)
    assert answer.status == 200, answer
    return [item["_id"] for item in answer.body]


def _documents(base: str, key: str) -> int:
    answer = _call(base, key, "GET", "/api/searchmod/indexes/item")
    assert answer.status == 200, answer
    return int(answer.body["documents"])


def _documents_reach(base: str, key: str, expected: int) -> None:
    """The index holds `expected` documents, soon: the rows of the last
    commits are written by whichever process holds the index's writer lock,
    each server's follower thread looks every 0.3 s, and a loaded machine
    may take longer (waited for, up to 30 s)."""
    deadline = time.monotonic() + 30
    while (found := _documents(base, key)) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found == expected


class Load:
    """Threads writing items and reading lists and single items through the
    API until stopped; every answer kept."""

    def __init__(self, base: str, key: str, writers: int, readers: int) -> None:
        self.base, self.key = base, key
        self.writes: list[Answer] = []
        self.reads: list[tuple[str, Answer]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._write, args=(n,)) for n in range(writers)]
        self._threads += [threading.Thread(target=self._read) for _ in range(readers)]

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(60)

    def _write(self, n: int) -> None:
        i = 0
        while not self._stop.is_set():
            answer = _call(self.base, self.key, "POST", "/api/content/item/item",
                           {"data": {"title": f"api {n}-{i}", "n": -1}})
            with self._lock:
                self.writes.append(answer)
            i += 1
            time.sleep(0.01)

    def _read(self) -> None:
        paths = ["/api/content/items/item?limit=20&sort=" + urllib.parse.quote('{"n":-1}'),
                 "/api/content/items/item?limit=5&filter=" + urllib.parse.quote('{"n":{"$gt":100}}'),
                 "/api/searchmod/search/item?q=words&limit=5",
                 "/api/system/healthcheck"]
        i = 0
        while not self._stop.is_set():
            path = paths[i % len(paths)]
            answer = _call(self.base, self.key, "GET", path)
            with self._lock:
                self.reads.append((path, answer))
            i += 1
            time.sleep(0.01)

    def acknowledged(self) -> set[str]:
        return {a.body["_id"] for a in self.writes if a.status == 200}

    def check(self, max_read_seconds: float = 3.0) -> None:
        """No 500 (or any other failure); a refused write is a 503 that says
        when to retry; reads answer, and in bounded time."""
        for answer in self.writes:
            if answer.status == 200:
                continue
            assert answer.status == 503, answer
            assert answer.headers.get("retry-after", "").isdigit(), answer
            assert isinstance(answer.body, dict) and isinstance(answer.body.get("error"), str), answer
        assert self.reads
        for path, answer in self.reads:
            assert answer.status == 200, (path, answer)
        slowest = max(self.reads, key=lambda r: r[1].seconds)
        assert slowest[1].seconds < max_read_seconds, slowest


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    data = tmp_path / "data"
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "1"}) as (base, key, _log):
        _prepare(base, key)
        yield base, key, data


def test_a_long_import_while_the_api_is_written_and_read(server: tuple[str, str, Path], tmp_path: Path) -> None:
    base, key, data = server
    bundle = tmp_path / "bundle.json"
    # many small batches (40) that writers meet the gaps between also on a
    # busy machine, where a short import may pass before they are scheduled
    # (more items would make the search's catch-up the slowest read instead)
    ids = _bundle(bundle, 2000)

    with Load(base, key, writers=3, readers=2) as load:
        time.sleep(0.3)
        started = time.monotonic()
        run = _import(data, bundle, QUIRE_STORE_IMPORT_BATCH_ITEMS="50")
        out, err = run.communicate(timeout=180)
        took = time.monotonic() - started
        time.sleep(0.3)
    print(f"import of {len(ids)} items under load: {took:.1f} s; {len(load.writes)} API writes "
          f"({sum(a.status == 503 for a in load.writes)} x 503), {len(load.reads)} reads, slowest read "
          f"{max(r[1].seconds for r in load.reads):.2f} s")
    assert run.returncode == 0, err
    assert "2000 items" in out
    load.check()
    # API writes got through during the import, not only before and after
    # it: rows the API wrote are stored between the import's batches. (Read
    # from the rows, not the clock: on a fast machine the import's own
    # start-up is most of its time.)
    order = _stored_ids(data)
    imported = set(ids)
    first = next(i for i, id_ in enumerate(order) if id_ in imported)
    last = max(i for i, id_ in enumerate(order) if id_ in imported)
    between = [id_ for id_ in order[first:last] if id_ not in imported]
    print(f"{len(between)} API writes stored between the import's first and last item")
    assert len(between) >= 1, (len(between), took)
    assert set(between) <= load.acknowledged()

    stored = _all_ids(base, key)
    assert len(stored) == len(set(stored))
    assert set(ids) <= set(stored)
    assert load.acknowledged() <= set(stored)
    assert len(stored) == len(ids) + len(load.acknowledged())
    # The search index followed every write, of the import and of the API.
    _documents_reach(base, key, len(stored))

    # Again, while the API is written: the bundle's items are replaced in
    # place, nothing is doubled.
    with Load(base, key, writers=2, readers=1) as again:
        rerun = _import(data, bundle)
        out, err = rerun.communicate(timeout=180)
    assert rerun.returncode == 0, err
    again.check()
    after = _all_ids(base, key)
    assert len(after) == len(set(after))
    assert len(after) == len(stored) + len(again.acknowledged())
    assert set(stored) | again.acknowledged() == set(after)
    _documents_reach(base, key, len(after))


def test_an_import_killed_half_way_leaves_whole_batches_and_runs_again(
    server: tuple[str, str, Path], tmp_path: Path
) -> None:
    base, key, data = server
    bundle = tmp_path / "bundle.json"
    ids = _bundle(bundle, 6000)
    by_id = {item["_id"]: item for item in json.loads(bundle.read_text())["items"]["item"]}

    with Load(base, key, writers=0, readers=2) as load:
        run = _import(data, bundle, QUIRE_STORE_IMPORT_BATCH_ITEMS="250")
        # Kill it once some batches are in and many are still to come.
        deadline = time.monotonic() + 120
        while not 750 <= len(_stored_ids(data)) < 4000:
            assert run.poll() is None, "the import ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        run.send_signal(signal.SIGKILL)
        run.communicate(timeout=30)
        killed_at = len(_stored_ids(data))
        time.sleep(0.5)  # reads go on after the kill
    load.check()

    # What the killed import committed is a prefix of the bundle, each item
    # whole, and the index agrees with it: no batch is half there.
    stored = _stored_ids(data)
    print(f"import killed with {len(stored)} of {len(ids)} items stored")
    assert len(stored) == killed_at
    assert 0 < len(stored) < len(ids)
    assert stored == ids[: len(stored)]
    conn = sqlite3.connect(f"file:{data / 'quire.db'}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    for item in _call(base, key, "GET", "/api/content/items/item?limit=50&skip=100").body["data"]:
        source = by_id[item["_id"]]
        assert {k: item.get(k) for k in ("title", "body", "n", "_state", "_created")} == {
            k: source[k] for k in ("title", "body", "n", "_state", "_created")}
    _documents_reach(base, key, len(stored))

    # The server writes right away: the killed process's lock died with it.
    write = _call(base, key, "POST", "/api/content/item/item", {"data": {"title": "after the kill"}}, timeout=10)
    assert write.status == 200, write
    assert write.seconds < 3

    # Running the import again completes it.
    rerun = _import(data, bundle)
    out, err = rerun.communicate(timeout=180)
    assert rerun.returncode == 0, err
    after = _all_ids(base, key)
    assert len(after) == len(set(after)) == len(ids) + 1
    assert set(after) == set(ids) | {write.body["_id"]}
    assert [i for i in _stored_ids(data) if i != write.body["_id"]] == ids
    _documents_reach(base, key, len(ids) + 1)


def test_writes_refused_during_an_import_are_503_and_not_stored(tmp_path: Path) -> None:
    # An API write that waits only 50 ms for the lock meets import batches
    # (up to a quarter of a second each) often: it must answer 503 with
    # Retry-After and leave nothing behind.
    data = tmp_path / "data"
    bundle = tmp_path / "bundle.json"
    ids = _bundle(bundle, 3000)
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "1", "QUIRE_STORE_LOCK_TIMEOUT_MS": "50"}) as (base, key, _):
        _prepare(base, key)
        with Load(base, key, writers=3, readers=1) as load:
            # A write meets a batch by chance: on a fast run an import of a
            # few batches may pass between writes. The same import again
            # replaces its items in place, so it runs until one did (or 5 times).
            for _ in range(5):
                run = _import(data, bundle)
                out, err = run.communicate(timeout=180)
                assert run.returncode == 0, err
                if any(a.status == 503 for a in list(load.writes)):
                    break
        load.check()
        refused = [a for a in load.writes if a.status == 503]
        print(f"{len(load.writes)} API writes, {len(refused)} refused with 503")
        assert refused, "no write met the import's lock"
        answer = _call(base, key, "GET", "/api/content/items/item?fields=" + urllib.parse.quote('{"title":1}'),
                       timeout=60)
        # each write had a title of its own: those stored are the acknowledged ones
        written = [item["title"] for item in answer.body if item["title"].startswith("api ")]
        acknowledged = [a.body["title"] for a in load.writes if a.status == 200]
        assert sorted(written) == sorted(acknowledged)
        assert len(answer.body) == len(ids) + len(acknowledged)


def test_an_interrupted_import_says_what_it_stored(tmp_path: Path) -> None:
    # Ctrl-C half-way: exit 130, and a line that says how many items are
    # stored and that running the import again completes it.
    bundle = tmp_path / "bundle.json"
    ids = _bundle(bundle, 8000)
    for attempt in range(3):
        data = tmp_path / f"data{attempt}"
        subprocess.run([sys.executable, "-m", "quire", "init", "--data", str(data)], check=True, capture_output=True)
        run = _import(data, bundle, QUIRE_STORE_IMPORT_BATCH_ITEMS="250")
        deadline = time.monotonic() + 120
        while not _stored_ids_or_none(data):
            assert run.poll() is None and time.monotonic() < deadline, "the import ended before it could be stopped"
            time.sleep(0.01)
        # Half-way for sure, however busy the machine: the write lock held
        # here stops the import at its next batch (it waits for the lock),
        # and the interrupt comes while it waits.
        holder = sqlite3.connect(data / "quire.db", timeout=30, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            if len(_stored_ids(data)) == len(ids):  # the whole import passed before the lock was had
                run.communicate(timeout=60)
                continue
            run.send_signal(signal.SIGINT)
            try:
                out, err = run.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                # stopped, and closing: what it writes then (the search
                # index's last rows) waits for the lock held here
                holder.rollback()
                out, err = run.communicate(timeout=60)
        finally:
            holder.close()
            if run.poll() is None:
                run.kill()
                run.communicate()
        break
    else:
        pytest.fail("the import ended before it could be stopped, three times")
    stored = len(_stored_ids(data))
    assert run.returncode == 130, err
    assert 0 < stored < len(ids)
    assert f"interrupted: {stored} of {len(ids)} items are stored; run the same import again to complete it" in err
    assert out == ""


def _stored_ids_or_none(data: Path) -> list[str] | None:
    try:
        return _stored_ids(data)
    except sqlite3.Error:  # not created yet
        return None


def test_an_import_a_hook_stops_half_way_says_what_it_stored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bundle = tmp_path / "bundle.json"
    ids = _bundle(bundle, 5000)
    (data / "hooks").mkdir(parents=True)
    (data / "hooks" / "stop.py").write_text(
        "from quire.events import Reject\n\n"
        "def register(events):\n"
        "    def stop(model, item, **_):\n"
        "        if item.get('n') == 4500:\n"
        "            raise Reject('no more')\n"
        "    events.on('content.item.save.before', stop)\n")
    run = subprocess.run([sys.executable, "-m", "quire", "import", "--data", str(data), str(bundle)],
                         capture_output=True, text=True, timeout=120)
    stored = _stored_ids(data)
    assert run.returncode == 1
    assert stored == ids[: len(stored)] and 0 < len(stored) <= 4500
    assert run.stderr.splitlines() == [
        f"error: item/{ids[4500]}: no more",
        f"the import stopped: {len(stored)} of 5000 items are stored; run the same import again to complete it"]
