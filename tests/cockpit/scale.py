"""The fixture site made larger: many more posts and assets, copied from
the real ones with new ids (for the import benchmark and for stopping an
import half-way)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

BATCH = 5000


def scale_site(site: Path, items: int, assets: int = 0) -> None:
    """Add `items` posts (copies of the fixture's published ones, each a
    little different) and `assets` assets (copies of its pictures, each
    with a file of its own) to the site folder `site`."""
    storage = site / "storage"
    conn = sqlite3.connect(storage / "data" / "content.sqlite")
    posts = [json.loads(doc) for (doc,) in conn.execute("SELECT document FROM collections_posts")]
    posts = [p for p in posts if p.get("_state") == 1]
    rows = []
    for n in range(items):
        post = dict(posts[n % len(posts)])
        post["_id"] = f"7{n:023x}"
        post["title"] = f"{post['title']} {n}"
        rows.append((json.dumps(post),))
        if len(rows) == BATCH:
            conn.executemany("INSERT INTO collections_posts (document) VALUES (?)", rows)
            rows = []
    conn.executemany("INSERT INTO collections_posts (document) VALUES (?)", rows)
    conn.commit()
    conn.close()
    if not assets:
        return
    conn = sqlite3.connect(storage / "data" / "app.sqlite")
    pictures = [json.loads(doc) for (doc,) in conn.execute("SELECT document FROM assets")
                if json.loads(doc)["mime"] in ("image/png", "image/jpeg", "image/gif")]
    for n in range(assets):
        asset = dict(pictures[n % len(pictures)])
        source = storage / "uploads" / asset["path"].lstrip("/")
        folder, name = asset["path"].rsplit("/", 1)
        asset["path"] = f"{folder}/{n}-{name}"
        asset["_id"] = f"8{n:023x}"
        shutil.copyfile(source, storage / "uploads" / asset["path"].lstrip("/"))
        conn.execute("INSERT INTO assets (document) VALUES (?)", (json.dumps(asset),))
    conn.commit()
    conn.close()
