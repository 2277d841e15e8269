#!/usr/bin/env python3
"""CPU time of one list page read from the store (kept answers off) in
process, through the ASGI app without HTTP: 2,000 posts linked to an
author, 5,000 requests timed by the process's CPU clock. Arguments: `time`
or `prof` (a pyinstrument profile), the path, the query string. Used for
"The write path under mixed load" in docs/benchmarks.md.

    .venv/bin/python bench/profile_list.py time /api/content/items/posts "limit=20&populate=1"
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from quire.app import build_app
from quire.config import load_settings
from quire.content.models import parse_model


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "time"
    path = sys.argv[2] if len(sys.argv) > 2 else "/api/content/items/posts"
    query = (sys.argv[3] if len(sys.argv) > 3 else "limit=20").encode()
    app = build_app(load_settings(Path(tempfile.mkdtemp()) / "data",
                                  env={"QUIRE_SERVER_QUIET": "true", "QUIRE_API_KEPT_ANSWERS_MB": "0"}))
    quire = app.state.quire
    quire.models.save(parse_model("authors", {"fields": [{"name": "name", "type": "text"}]}))
    quire.models.save(parse_model("posts", {"fields": [
        {"name": "title", "type": "text"}, {"name": "summary", "type": "longtext"}, {"name": "body", "type": "markdown"},
        {"name": "rating", "type": "number"}, {"name": "tags", "type": "tags"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}]}))
    key = str(quire.auth.create_key("bench", "admin")["key"])
    identity = quire.auth.identify(key)

    async def seed() -> None:
        author = await quire.content.save("authors", {"name": "Ann", "_state": 1}, identity)
        for n in range(2000):
            await quire.content.save("posts", {"title": f"t{n}", "summary": "x" * 200, "body": "y" * 700, "rating": n,
                                               "tags": ["a"], "_state": 1,
                                               "author": {"_id": author["_id"], "_model": "authors"}}, identity)

    async def request() -> int:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": query,
                 "headers": [(b"api-key", key.encode()), (b"host", b"bench")], "client": ("127.0.0.1", 1),
                 "server": ("bench", 80), "scheme": "http", "http_version": "1.1", "root_path": ""}
        await app(scope, receive, send)
        return int(sent[0]["status"])

    async def timed(count: int) -> float:
        assert await request() == 200
        started = time.process_time()
        for _ in range(count):
            await request()
        return (time.process_time() - started) / count * 1e6

    asyncio.run(seed())
    try:
        if mode == "prof":
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0002)
            profiler.start()
            asyncio.run(timed(5000))
            profiler.stop()
            print(profiler.output_text(unicode=False, color=False))
        else:
            print(f"{asyncio.run(timed(5000)):.1f} µs of CPU a request")
    finally:
        quire.close()


if __name__ == "__main__":
    main()
