#!/usr/bin/env python3
"""What the aggregation budget costs on the normal path: `$match` + `$group`
(and a Python `$sort` after `$addFields`) over 100,000 small items in a
SQLite store, in process, best of a few runs each (CPU time: the machine is
shared). Run it before and after a
change to the budget (`pipeline.py`) and compare.

    .venv/bin/python bench/aggregate_budget.py            # 100,000 items, best of 5
    .venv/bin/python bench/aggregate_budget.py --items 20000 --runs 3
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from quire.store import SqliteStore
from quire.store.pipeline import aggregate
from quire.store.stages import parse_pipeline

PIPELINES: dict[str, list[dict[str, Any]]] = {
    "$match + $group ($sum, $avg)": [
        {"$match": {"n": {"$gte": 10}}},
        {"$group": {"_id": "$genre", "count": {"$sum": 1}, "avg": {"$avg": "$n"}}},
    ],
    "$match + $group with $push": [
        {"$match": {"n": {"$lt": 50}}},
        {"$group": {"_id": "$genre", "titles": {"$push": "$title"}}},
    ],
    "$addFields + $sort + $limit": [
        {"$addFields": {"label": {"$concat": ["$genre", "-", "$title"]}}},
        {"$sort": {"label": 1}},
        {"$limit": 10},
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "store.db")
        coll = store.collection("content/posts")
        with store.transaction():
            for i in range(args.items):
                coll.insert({"title": f"post {i}", "genre": f"g{i % 7}", "n": i % 100, "tags": ["a", "b"]})
        for name, spec in PIPELINES.items():
            stages = parse_pipeline(spec)
            best = float("inf")
            for _ in range(args.runs):
                start = time.process_time()
                out = list(aggregate(coll, stages, lambda stage, keys: []))
                best = min(best, time.process_time() - start)
            print(f"{name:32} {best * 1000:8.1f} ms  ({len(out)} documents)")
        store.close()


if __name__ == "__main__":
    main()
