"""A throwaway PostgreSQL for the benchmarks, loaded with the very data
bench/run.py generated into SQLite.

The server is the tests' `PostgresServer` (tests/postgres.py: Debian's
`initdb` and `postgres` on 127.0.0.1, as `nobody` when run as root, with
`fsync=off` and `synchronous_commit=off`, since the data is thrown away).
The data is copied document by document through the store API from the
SQLite data dir of bench/run.py, so both backends answer the same posts,
authors and pictures under the same ids; the models are saved through
`ModelService` on the PostgreSQL side, so their declared indexes are built
by PostgreSQL's own store code.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:  # tests.postgres lives beside src/, not in the installed package
    sys.path.insert(0, str(ROOT))

from tests.postgres import PostgresServer, binaries  # noqa: E402

COPIED = ("assets/assets", "content/authors", "content/posts")
COPY_BATCH = 5_000


def postgres_missing() -> bool:
    """True (and says so on stderr) when PostgreSQL's programs are not installed."""
    if binaries() is not None:
        return False
    print("error: PostgreSQL is not installed (apt-get install postgresql)", file=sys.stderr)
    return True


@contextlib.contextmanager
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server for this run, destroyed (data and all) at the end."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


def store_env(url: str) -> dict[str, str]:
    """The settings that put a data dir's store on PostgreSQL."""
    return {"QUIRE_STORE_URL": url}


def open_quire(data_dir: Path, env: dict[str, str]) -> Any:
    from quire.app import Quire
    from quire.config import load_settings

    return Quire(load_settings(data_dir, env=env))


def load(sqlite_dir: Path, pg_dir: Path, url: str, models: list[dict[str, Any]]) -> dict[str, Any]:
    """Copy the benchmark data of `sqlite_dir` into the PostgreSQL schema of
    `url` (with `pg_dir` as that site's data dir): the models first, then
    every document of COPIED as it is. Answers counts and seconds."""
    from quire.content.models import parse_model

    started = time.perf_counter()
    pg_dir.mkdir(parents=True, exist_ok=True)
    source = open_quire(sqlite_dir, {})
    target = open_quire(pg_dir, store_env(url))
    counts: dict[str, int] = {}
    try:
        for definition in models:
            target.models.save(parse_model(definition["name"], definition))
        for name in COPIED:
            into = target.store.collection(name)
            batch: list[dict[str, Any]] = []
            counts[name] = 0
            for doc in source.store.collection(name).find():
                batch.append(doc)
                if len(batch) >= COPY_BATCH:
                    counts[name] += _insert(target, into, batch)
                    batch = []
            counts[name] += _insert(target, into, batch)
    finally:
        source.close()
        target.close()
    seconds = time.perf_counter() - started
    print(f"Loaded into PostgreSQL in {seconds:.1f} s: "
          + ", ".join(f"{n:,} {name}" for name, n in counts.items()), flush=True)
    return {"counts": counts, "seconds": round(seconds, 1)}


def _insert(target: Any, into: Any, docs: list[dict[str, Any]]) -> int:
    if not docs:
        return 0
    with target.store.transaction():
        for doc in docs:
            into.insert(doc)
    return len(docs)


def rotate_key(data_dir: Path, env: dict[str, str], name: str) -> str:
    """A fresh admin key named `name` on the site of `data_dir` + `env`."""
    quire = open_quire(data_dir, env)
    try:
        for key in quire.auth.list_keys():
            if key["name"] == name:
                quire.auth.delete_key(key["_id"])
        return str(quire.auth.create_key(name, "admin")["key"])
    finally:
        quire.close()
