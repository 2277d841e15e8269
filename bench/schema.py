#!/usr/bin/env python3
"""Benchmark of safe schema changes on a 100,000-item model.

Writes 100,000 items of a model `posts` (about 0.6 KB of JSON each: a
localized `title` with German and French values, a number, a select, tags
and a longer text, and an integer `_rev`) straight into the store, in a
fresh data dir under bench/.work/schema. Then it times, through
`ModelService` (what `PUT /api/system/models/{name}` and the studio call),
each change once, in this order:

- field usage (`field_usage`: one pass counting non-empty values);
- a type change that stored values do not fit (number -> boolean: refused
  after checking every value, nothing stored);
- a type change that fits (select -> text: every value checked, passes);
- renaming a plain field held by every item (`n` -> `count`);
- renaming a localized field (`title`, `title_de`, `title_fr` ->
  `headline...`), declared in an index (the index is built again);
- dropping a field with its values (`dropValues`).

Times are wall-clock seconds of the whole `save` (checks, the one UPDATE,
indexes, commit) on this machine, which other processes share: read them
as sizes, not as exact figures. A run with the standard size writes the
"Schema changes" section of docs/benchmarks.md (--no-docs to skip).

    .venv/bin/python bench/schema.py                   # standard: 100,000 items
    .venv/bin/python bench/schema.py --items 5000 --no-docs
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import DEFAULT_DOCS, ROOT, _open_quire, machine_paragraph, update_doc  # noqa: E402

STANDARD = 100_000
SEED = 15
FIELDS: list[dict[str, Any]] = [
    {"name": "title", "type": "text", "i18n": True},
    {"name": "n", "type": "number"},
    {"name": "kind", "type": "select", "opts": {"options": ["news", "guide", "review"]}},
    {"name": "tags", "type": "tags"},
    {"name": "body", "type": "longtext"},
]
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho"]


def fill(quire: Any, items: int) -> None:
    from quire.content.locales import LocaleService
    from quire.content.models import parse_model

    quire.get(LocaleService).save([{"i18n": "de", "name": "Deutsch"}, {"i18n": "fr", "name": "Français"}])
    quire.models.save(parse_model("posts", {"fields": FIELDS, "indexes": ["title", "n"]}))
    rng = random.Random(SEED)
    coll = quire.store.collection("content/posts")
    now = int(time.time())
    for start in range(0, items, 5000):
        with quire.store.transaction():
            for i in range(start, min(start + 5000, items)):
                words = " ".join(rng.choice(WORDS) for _ in range(60))
                coll.insert({"_id": f"{i:024x}", "_state": 1, "_created": now, "_modified": now, "_rev": 1,
                             "title": f"Post {i}", "title_de": f"Beitrag {i}", "title_fr": f"Article {i}",
                             "n": rng.randint(0, 1000), "kind": rng.choice(["news", "guide", "review"]),
                             "tags": rng.sample(WORDS, 3), "body": words})


def timed(step: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    try:
        result = step()
    except Exception as exc:  # a refusal is what some steps measure
        result = exc
    return time.perf_counter() - began, result


def changed(fields: list[dict[str, Any]], which: str, **change: Any) -> list[dict[str, Any]]:
    return [{**f, **change} if f["name"] == which else f for f in fields]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark of schema changes (see the docstring).")
    parser.add_argument("--items", type=int, default=STANDARD)
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    args = parser.parse_args(argv)
    from quire.content.models import parse_model

    load = os.getloadavg()[0]
    work = ROOT / "bench" / ".work" / "schema"
    shutil.rmtree(work, ignore_errors=True)
    quire = _open_quire(work / "data")
    try:
        began = time.perf_counter()
        fill(quire, args.items)
        print(f"wrote {args.items:,} items in {time.perf_counter() - began:.1f} s")
        models = quire.models
        fields = FIELDS
        rows: list[tuple[str, float, str]] = []

        seconds, usage = timed(lambda: models.field_usage("posts"))
        rows.append(("field usage (5 fields, one pass)", seconds, f"title held by {usage.fields['title']:,}"))

        seconds, refused = timed(lambda: models.save(parse_model("posts", {
            "fields": changed(fields, "n", type="boolean"), "indexes": ["title", "n"]})))
        rows.append(("type change refused (number -> boolean)", seconds,
                     f"{refused.extra['count']:,} items in the way"))

        fields = changed(fields, "kind", type="text")
        seconds, _ = timed(lambda: models.save(parse_model("posts", {"fields": fields, "indexes": ["title", "n"]})))
        rows.append(("type change that fits (select -> text)", seconds, "every value checked"))

        fields = changed(fields, "n", name="count")
        seconds, _ = timed(lambda: models.save(parse_model("posts", {"fields": fields, "indexes": ["title", "n"]},
                                                           {"n": "count"}), {"n": "count"}))
        rows.append(("rename a plain field (n -> count), indexed", seconds, "every item rewritten, index rebuilt"))

        fields = changed(fields, "title", name="headline")
        seconds, _ = timed(lambda: models.save(parse_model("posts", {"fields": fields, "indexes": ["title", "count"]},
                                                           {"title": "headline"}), {"title": "headline"}))
        rows.append(("rename a localized field (3 keys), indexed", seconds, "every item rewritten, index rebuilt"))

        fields = [f for f in fields if f["name"] != "body"]
        seconds, _ = timed(lambda: models.save(parse_model("posts", {"fields": fields,
                                                                     "indexes": ["headline", "count"]}),
                                               drop_values=True))
        rows.append(("drop a field with its values (body)", seconds, "every item rewritten"))

        sample = quire.store.collection("content/posts").get(f"{0:024x}")
        assert sample is not None and sample["count"] is not None and sample["_rev"] == 4, sample
        assert "body" not in sample and sample["headline_de"] == "Beitrag 0", sample
    finally:
        quire.close()

    table = "| change | seconds | note |\n|---|---:|---|\n" + "".join(
        f"| {what} | {seconds:.2f} | {note} |\n" for what, seconds, note in rows)
    print(table)
    if args.items == STANDARD and not args.no_docs:
        section = (
            "## Schema changes\n\n"
            f"`bench/schema.py`: {args.items:,} items of one model (about 0.6 KB each, a localized title in "
            "three locales), each change timed once through `ModelService.save` (checks, one UPDATE with "
            "SQLite's JSON functions, indexes, commit). Refusals cost a full read of the field's values; "
            "renames and dropped values rewrite every item holding the field in one transaction, during which "
            "other writes wait (reads do not: WAL). Load average when the run began: "
            f"{load:.1f} on {os.cpu_count()} cores (other processes share the machine).\n\n" + table
        )
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, "Schema changes")
        print(f"wrote the Schema changes section of {DEFAULT_DOCS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
