"""A backup taken while a real server (`quire serve --workers 2`) is
written to: items created and changed, pictures uploaded and deleted. The
restored site holds every write acknowledged before the backup's moment,
no document torn between two writes, and a file for every asset."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx2

from tests.assets.helpers import solid
from tests.backups.conftest import Target
from tests.commands import run_quire
from tests.serving import quire_server


class Writers:
    """Threads writing through the API until stopped; every acknowledged
    write with the time its answer came."""

    def __init__(self, base: str, key: str) -> None:
        self.base, self.key = base, key
        self.stop = threading.Event()
        self.created: list[tuple[str, float]] = []  # (id, acknowledged at)
        self.changed: dict[str, list[tuple[int, float]]] = {}  # id -> (n, acknowledged at)
        self.uploaded: list[tuple[str, float]] = []
        self.deleted: list[tuple[str, float]] = []
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self._items), threading.Thread(target=self._changes),
                        threading.Thread(target=self._pictures)]

    def __enter__(self) -> Writers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)

    def _client(self) -> httpx2.Client:
        return httpx2.Client(base_url=self.base, headers={"api-key": self.key}, timeout=30)

    def _items(self) -> None:
        with self._client() as client:
            n = 0
            while not self.stop.is_set():
                answer = client.post("/api/content/item/notes", json={"data": {"title": f"note {n}", "n": 0}})
                if answer.status_code == 200:
                    self.created.append((answer.json()["_id"], time.time()))
                elif answer.status_code != 503:
                    self.errors.append(answer.text)
                n += 1

    def _changes(self) -> None:
        with self._client() as client:
            n = 1
            while not self.stop.is_set():
                if not self.created:
                    time.sleep(0.01)
                    continue
                item_id = self.created[n % len(self.created)][0]
                answer = client.post("/api/content/item/notes",
                                     json={"data": {"_id": item_id, "title": f"note changed {n}", "n": n}})
                if answer.status_code == 200:
                    self.changed.setdefault(item_id, []).append((n, time.time()))
                elif answer.status_code != 503:
                    self.errors.append(answer.text)
                n += 1

    def _pictures(self) -> None:
        with self._client() as client:
            n = 0
            while not self.stop.is_set():
                data = solid(8 + n % 40, 6, (n % 255, 80, 120))
                answer = client.post("/api/assets", files={"files": (f"p{n}.png", data, "image/png")})
                if answer.status_code == 200:
                    self.uploaded.append((answer.json()[0]["_id"], time.time()))
                elif answer.status_code != 503:
                    self.errors.append(answer.text)
                if n % 2 and len(self.uploaded) > 2:
                    gone = self.uploaded[-2][0]
                    answer = client.delete(f"/api/assets/{gone}")
                    if answer.status_code == 200:
                        self.deleted.append((gone, time.time()))
                n += 1


def _moment(archive: Path) -> float:
    with tarfile.open(archive) as tar:
        head = tar.extractfile("quire-backup/format.json")
        assert head is not None
        return float(json.loads(head.read())["at"])


def test_a_backup_under_steady_writes_restores_a_moment(data_dir: Path, target: Target, tmp_path: Path) -> None:
    archive = tmp_path / "site.tar"
    with quire_server(data_dir, env={"QUIRE_SERVER_QUIET": "1"}) as (base, key, _):
        with httpx2.Client(base_url=base, headers={"api-key": key}) as client:
            model = {"type": "collection", "fields": [{"name": "title", "type": "text"}, {"name": "n", "type": "number"}]}
            assert client.put("/api/system/models/notes", json=model).status_code == 200
        with Writers(base, key) as writers:
            time.sleep(1.0)
            backup = subprocess.run([sys.executable, "-m", "quire", "backup", "--data", str(data_dir), str(archive)],
                                    capture_output=True, text=True, timeout=300)
            time.sleep(1.0)
        assert backup.returncode == 0, backup.stderr
        assert not writers.errors, writers.errors[:3]
    at = _moment(archive)
    before = [i for i, acked in writers.created if acked < at]
    after = [i for i, acked in writers.created if acked > at + 0.5]
    assert len(before) > 20 and after, (len(before), len(after))  # writes on both sides of the moment

    run_quire("restore", "--data", str(target.data), str(archive), env=target.env)
    app = target.open()
    try:
        quire: Any = app.state.quire
        stored = {d["_id"]: d for d in quire.store.collection("content/notes").find()}
        # every creation acknowledged before the moment is there
        assert set(before) <= set(stored)
        for item_id, doc in stored.items():
            # no torn document: the title and the number are of one write
            expected = "note changed " + str(doc["n"]) if doc["n"] else doc["title"]
            assert doc["title"] == expected, doc
            # every change acknowledged before the moment is in (or a later one)
            acked = [n for n, at_ in writers.changed.get(item_id, []) if at_ < at]
            if acked:
                assert doc["n"] >= max(acked), (doc, acked)
        # every asset has its file, the bytes its hash names; deletions before the moment are done
        assets = {a["_id"]: a for a in quire.store.collection("assets/assets").find()}
        for asset in assets.values():
            data = quire.assets.uploads.read(asset["path"].lstrip("/"))
            assert hashlib.sha256(data).hexdigest() == asset["_hash"]
        assert not {i for i, acked in writers.deleted if acked < at} & set(assets)
        assert {i for i, acked in writers.uploaded if acked < at} - {i for i, _ in writers.deleted} <= set(assets)
    finally:
        app.state.quire.close()
