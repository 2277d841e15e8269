#!/usr/bin/env python3
"""Benchmark of the studio's assets manager on a 10,000-asset library.

Writes 10,000 asset documents (90 % images, the rest documents, videos and
archives; 20 folders holding half of them; tags from a small set) straight
into the store of a data dir under bench/.work/studio-assets, once: a
marker file says the data is complete, and later runs reuse it. The grid
needs no file: it shows thumbnails by address, which the browser fetches
afterwards (and which are cached files once made).

Then it starts a real `quire serve` (two workers) on that data dir, logs
in an administrator over HTTP and times `GET /studio/assets` (the library:
the session lookup, the page of assets with its total, the folders, the
template) `--requests` times per scenario after 5 warm-up requests. Times
are the client's wall clock over HTTP on 127.0.0.1: the server's time plus
the loopback transport (well under a millisecond).

Results go to stdout and, for a standard-size run, to the "Studio: assets
manager" section of docs/benchmarks.md (--no-docs to skip).

    .venv/bin/python bench/studio_assets.py                  # standard: 10,000 assets
    .venv/bin/python bench/studio_assets.py --assets 2000 --no-docs
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import DEFAULT_DOCS, ROOT, machine_paragraph, update_doc  # noqa: E402

sys.path.insert(0, str(ROOT))

STANDARD = 10_000
SEED = 17
PASSWORD = "correct horse battery"
FOLDERS = 20
TAGS = ["sea", "city", "people", "food", "night", "nature", "work", "travel"]
KINDS = [("image", "image/jpeg", "jpg", 0.9), ("document", "application/pdf", "pdf", 0.05),
         ("video", "video/mp4", "mp4", 0.03), ("archive", "application/zip", "zip", 0.02)]
# (label, query string): what a site manager does with a big library
SCENARIOS: list[tuple[str, str]] = [
    ("grid, first page (48), newest first, with total", ""),
    ("list view of the same page", "LIST"),
    ("one folder's first page", "?folder={folder}"),
    ("type filter: documents", "?type=document"),
    ("tag filter: `night`", "?tag=night"),
    ("title search `photo 12`", "?q=photo+12"),
    ("page 100 of the grid", "?page=100"),
]


def fill(data: Path, count: int) -> list[str]:
    """The library, written once; answers the folder ids."""
    from quire.app import Quire
    from quire.config import load_settings

    quire = Quire(load_settings(data, env={"QUIRE_SERVER_QUIET": "true"}))
    rng = random.Random(SEED)
    try:
        now = int(time.time())
        assets = quire.store.collection("assets/assets")
        folders = quire.store.collection("assets/folders")
        ids = [f"{n + 1:024x}" for n in range(FOLDERS)]
        with quire.store.transaction():
            for n, folder_id in enumerate(ids):
                folders.insert({"_id": folder_id, "name": f"Folder {n:02d}", "parent": None,
                                "_created": now, "_modified": now})
        for start in range(0, count, 2000):
            with quire.store.transaction():
                for i in range(start, min(start + 2000, count)):
                    roll, acc = rng.random(), 0.0
                    kind = KINDS[0]
                    for candidate in KINDS:
                        acc += candidate[3]
                        if roll < acc:
                            kind = candidate
                            break
                    image = kind[0] == "image"
                    assets.insert({
                        "_id": f"a{i:023x}", "path": f"/2026/01/01/photo-{i}_0000.{kind[2]}",
                        "title": f"Photo {i}" if image else f"File {i}", "description": "", "altText": "",
                        "tags": rng.sample(TAGS, 2), "mime": kind[1], "type": kind[0],
                        "size": rng.randint(10_000, 5_000_000), "width": 1600 if image else None,
                        "height": 1200 if image else None, "colors": ["#336699", "#ffffff"] if image else [],
                        "thumbhash": None, "folder": ids[i % FOLDERS] if i % 2 else None, "fp": None,
                        "_hash": f"{i:064x}", "_created": now - count + i, "_modified": now - count + i,
                        "_cby": None})
        quire.users.create({"user": "ann", "email": "ann@example.org", "role": "admin", "password": PASSWORD})
    finally:
        quire.close()
    return ids


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark of the studio's assets manager (see the docstring).")
    parser.add_argument("--assets", type=int, default=STANDARD)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    args = parser.parse_args(argv)
    from tests.serving import quire_server

    load = os.getloadavg()[0]
    work = ROOT / "bench" / ".work" / "studio-assets"
    data = work / "data"
    marker = work / f"built-{args.assets}"
    if not marker.exists():
        shutil.rmtree(work, ignore_errors=True)
        began = time.perf_counter()
        fill(data, args.assets)
        marker.write_text("complete\n")
        print(f"wrote {args.assets:,} assets in {time.perf_counter() - began:.1f} s")
    folder = f"{2:024x}"  # the second folder: odd assets are in folders, every 20th from the first
    rows = []
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, _key, _log):
        client = Client(base)
        if True:
            page = client.get("/auth/login")
            csrf = re.search(r'name="csrf" value="([^"]*)"', page.text)
            assert csrf is not None
            login = client.post("/auth/login", data={"csrf": csrf.group(1), "user": "ann", "password": PASSWORD})
            assert login.status_code == 303, login.text
            view = "grid"
            for label, query in SCENARIOS:
                if query == "LIST" or (view == "list" and query != "LIST"):
                    view = "list" if query == "LIST" else "grid"
                    token = re.search(r'name="csrf" value="([^"]*)"', client.get("/studio/assets").text)
                    assert token is not None
                    client.post("/studio/assets/view", data={"csrf": token.group(1), "view": view})
                url = "/studio/assets" + ("" if query == "LIST" else query.format(folder=folder))
                for _ in range(5):
                    _get(client, url)
                times = []
                for _ in range(args.requests):
                    began = time.perf_counter()
                    text = _get(client, url)
                    times.append((time.perf_counter() - began) * 1000)
                total = text.split('class="list-total">', 1)[1].split("<", 1)[0].strip()
                rows.append((label, statistics.median(times), percentile(times, 0.99), total))
                print(f"{label:50} p50 {rows[-1][1]:6.1f} ms  p99 {rows[-1][2]:6.1f} ms  {total}")

    table = "| library page | p50 ms | p99 ms | shown |\n|---|---:|---:|---|\n" + "".join(
        f"| {label} | {p50:.1f} | {p99:.1f} | {total} |\n" for label, p50, p99, total in rows)
    if args.assets == STANDARD and not args.no_docs:
        section = (
            "## Studio: assets manager\n\n"
            f"`bench/studio_assets.py`: a library of {args.assets:,} assets (90 % images; {FOLDERS} folders "
            "holding half of them; two tags each), `GET /studio/assets` over HTTP against a real "
            f"`quire serve` (two workers) with a logged-in session, {args.requests} times per row after 5 "
            "warm-up requests: a page of 48 assets with its total and the folders, rendered (thumbnails are "
            "addresses the browser fetches afterwards). Times are the client's wall clock on 127.0.0.1. "
            "Target (issue 17): the grid's first page p50 <= 50 ms. "
            f"Load average when the run began: {load:.1f} on {os.cpu_count()} cores (other processes share "
            "the machine).\n\n" + table
        )
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, "Studio: assets manager")
        print(f"wrote the Studio: assets manager section of {DEFAULT_DOCS}")
    return 0


class Answer:
    def __init__(self, status: int, text: str) -> None:
        self.status_code = status
        self.text = text


class Client:
    """A browser over HTTP: a cookie jar, redirects not followed, a kept-alive connection."""

    def __init__(self, base: str) -> None:
        import http.client
        from urllib.parse import urlsplit

        self.base = base
        self.cookies: dict[str, str] = {}
        self.conn = http.client.HTTPConnection(urlsplit(base).netloc, timeout=30)

    def request(self, method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> Answer:
        sent = {"origin": self.base, **(headers or {})}
        if self.cookies:
            sent["cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.conn.request(method, url, body=body, headers=sent)
        response = self.conn.getresponse()
        text = response.read().decode()
        for header in response.headers.get_all("set-cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return Answer(response.status, text)

    def get(self, url: str) -> Answer:
        return self.request("GET", url)

    def post(self, url: str, data: dict[str, str]) -> Answer:
        from urllib.parse import urlencode

        return self.request("POST", url, urlencode(data).encode(),
                            {"content-type": "application/x-www-form-urlencoded"})


def _get(client: Any, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code, response.text[:500])
    return str(response.text)


if __name__ == "__main__":
    sys.exit(main())
