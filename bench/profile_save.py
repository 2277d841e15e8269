#!/usr/bin/env python3
"""CPU time of a content save in process, everything on (revisions, audit,
webhook and search handlers, asset references): 200 items of ten fields,
then 2,000 updates of two fields each, timed by the process's CPU clock
(other processes' load counts less than in wall time). `prof` prints a
pyinstrument profile instead (`pip install pyinstrument`). Used for "The
write path under mixed load" in docs/benchmarks.md.

    .venv/bin/python bench/profile_save.py [time|prof]
"""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

from quire.app import Quire
from quire.auth.service import Identity
from quire.config import load_settings
from quire.content.models import parse_model

FIELDS = [{"name": "title", "type": "text"}, {"name": "slug", "type": "text"}, {"name": "summary", "type": "longtext"},
          {"name": "body", "type": "markdown"}, {"name": "rating", "type": "number"},
          {"name": "featured", "type": "boolean"}, {"name": "tags", "type": "tags"},
          {"name": "category", "type": "select", "opts": {"options": ["news", "guides", "notes"]}},
          {"name": "published", "type": "date"}, {"name": "meta", "type": "object"}]


async def create_items(quire: Quire, identity: Identity, count: int = 200) -> list[str]:
    """`count` items of model `posts` (its ten fields filled); their ids."""
    ids = []
    for n in range(count):
        item = await quire.content.save("posts", {"title": f"t{n}", "slug": f"s{n}", "summary": "x" * 200,
                                                  "body": "y" * 2000, "rating": n, "tags": ["a", "b"],
                                                  "category": "news"}, identity)
        ids.append(item["_id"])
    return ids


async def saves(quire: Quire, count: int) -> float:
    """Milliseconds of CPU per update."""
    identity = quire.auth.identify(str(quire.auth.create_key("bench", "admin")["key"]))
    ids = await create_items(quire, identity)
    started = time.process_time()
    for n in range(count):
        await quire.content.save("posts", {"_id": random.choice(ids), "title": f"u{n}", "rating": n}, identity)
    return (time.process_time() - started) / count * 1000


def main() -> None:
    quire = Quire(load_settings(Path(tempfile.mkdtemp()) / "data", env={"QUIRE_SERVER_QUIET": "true"}))
    quire.models.save(parse_model("posts", {"fields": FIELDS}))
    try:
        if sys.argv[1:] == ["prof"]:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005)
            profiler.start()
            asyncio.run(saves(quire, 2000))
            profiler.stop()
            print(profiler.output_text(unicode=False, color=False))
        else:
            print(f"{asyncio.run(saves(quire, 2000)):.3f} ms of CPU a save")
    finally:
        quire.close()


if __name__ == "__main__":
    main()
