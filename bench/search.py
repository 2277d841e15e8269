#!/usr/bin/env python3
"""Benchmark of full-text search (`searchmod`).

Generates 100,000 published posts (title, markdown body, tags) of seeded
text whose words follow a Zipf-like distribution (a few common words, many
rare ones), writes them straight into the store in one transaction and
builds the search index `posts` through the service, timed. Then, on every
run: rebuilds the index (timed), measures in-process query latency for four
kinds of query (one word, two words, a prefix, a typo) and serves the data
with `quire serve --workers 2` to drive `GET /api/searchmod/search/posts`
with wrk over a mixed list of queries. Results go to stdout and, for a
standard-size run, to the "Search" section of docs/benchmarks.md.

The data is built once in bench/.work/search (a marker file lets later runs
with the same size reuse it; --fresh rebuilds it); the first build is timed
again, after dropping the index, whenever src/quire/searchmod changed
since. The query lists are made from the generated text, not from the
index: word frequency ranks are counted while the posts are written.

    .venv/bin/python bench/search.py              # the standard run, 2.5 to 3.5 minutes
    .venv/bin/python bench/search.py --fresh      # regenerate the data (and time the first build) first
    .venv/bin/python bench/search.py --posts 5000 --queries 100 --duration 2 --warmup 1 --no-docs   # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import hashlib
import itertools
import json
import os
import random
import re
import shutil
import signal
import statistics
import sys
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import (  # noqa: E402  (a sibling script, not a package)
    DEFAULT_DOCS,
    MB,
    ROOT,
    Outcome,
    Scenario,
    Server,
    _git_revision,
    _met,
    _ms,
    _open_quire,
    _terminate,
    add_load_options,
    busy_seconds,
    check_load_options,
    free_port,
    machine_paragraph,
    process_cpu,
    render_details,
    run_scenario,
    run_wrk,
    server_log_problems,
    update_doc,
    wrk_missing,
)

BENCH = Path(__file__).resolve().parent
DEFAULT_WORK = BENCH / ".work" / "search"
SECTION_TITLE = "Search"

GENERATOR_VERSION = 1  # bump when the generated data changes shape
SEED = 20260303
STANDARD_POSTS = 100_000
VOCABULARY = 50_000  # distinct words to draw from
ZIPF_S = 1.0  # the frequency of the word of rank r is proportional to 1 / r**s
TITLE_WORDS = (4, 8)  # about 6
BODY_WORDS = (90, 150)  # about 120
RANKS = (100, 5_000)  # query words come from these frequency ranks (1 = most frequent)
QUERIES = 500  # timed queries per kind
WARMUP_QUERIES = 50  # untimed queries per kind, before the timed ones
LIMIT = 20
INDEX = "posts"
INDEX_BODY: dict[str, Any] = {"model": "posts", "fields": ["title", "body", "tags"], "weights": {"title": 3}}
ADMIN_NAME = "bench"
SITE_KEY = "bench search site"  # a public-role key, as a website's server would send
RATE_TARGET = 2_000.0  # documents indexed per second
P50_TARGET_MS = 5.0
RPS_TARGET = 1_500.0  # mixed queries over HTTP, 2 workers
HTTP_P99_TARGET_MS = 50.0
SIZE_TARGET = 2.0  # the index at most this many times the indexed text
DICT = Path("/usr/share/dict/words")
ENDPOINT = f"/api/searchmod/search/{INDEX}?limit={LIMIT}&q="

POSTS_MODEL: dict[str, Any] = {
    "name": "posts", "label": "Posts", "type": "collection",
    "fields": [
        {"name": "title", "type": "text", "required": True},
        {"name": "body", "type": "markdown"},
        {"name": "tags", "type": "tags"},
    ],
}

KINDS: dict[str, str] = {
    "one": "one word",
    "two": "two words",
    "prefix": "prefix",
    "typo": "typo",
}
KIND_NOTES: dict[str, str] = {
    "one": "a word of frequency rank 100–5,000, then a space (a whole word, not a prefix)",
    "two": "two such words from one random post, then a space",
    "prefix": "the first 3 or 4 letters of such a word, no space (the last word is a prefix)",
    "typo": "such a word of 6+ letters with one letter (not the first) deleted or replaced, then a space",
}

# -- the vocabulary -----------------------------------------------------------

ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
          "bl", "br", "ch", "cl", "cr", "dr", "fl", "fr", "gl", "gr", "pl", "pr", "sc", "sh", "sl",
          "sp", "st", "th", "tr", "wh")
VOWELS = ("a", "e", "i", "o", "u", "a", "e", "i", "o", "ai", "ea", "ee", "io", "oo", "ou")
CODAS = ("", "", "", "", "n", "r", "s", "t", "l", "m", "d", "nd", "nt", "st", "ng", "rk", "ck", "x")
SYLLABLES = (1, 2, 2, 3, 3, 3, 4)


def _synthetic(rng: random.Random, count: int) -> list[str]:
    """Pronounceable words: (onset vowel)+ coda."""
    seen: set[str] = set()
    words: list[str] = []
    while len(words) < count:
        word = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(rng.choice(SYLLABLES)))
        word += rng.choice(CODAS)
        if len(word) >= 2 and word not in seen:
            seen.add(word)
            words.append(word)
    return words


def vocabulary(rng: random.Random) -> tuple[list[str], str]:
    """VOCABULARY words, most frequent first (shorter words tend to come
    first, as in real text), and where they came from."""
    source = "synthetic, pronounceable"
    words: list[str] = []
    with contextlib.suppress(OSError):
        found = sorted({w for w in DICT.read_text(errors="replace").split() if re.fullmatch(r"[a-z]{2,14}", w)})
        if len(found) >= VOCABULARY // 2:
            rng.shuffle(found)
            words = found[:VOCABULARY]
            source = f"from {DICT}, {len(found):,} lower-case words"
    if len(words) < VOCABULARY:
        seen = set(words)
        words += [w for w in _synthetic(rng, VOCABULARY) if w not in seen][:VOCABULARY - len(words)]
    noise = {w: len(w) + rng.gauss(0, 2.5) for w in words}
    return sorted(words, key=lambda w: (noise[w], w)), source


# -- the data -----------------------------------------------------------------


class Writer:
    """Seeded text: words drawn by Zipf rank, sentences, paragraphs."""

    def __init__(self, rng: random.Random, words: list[str]) -> None:
        self.rng = rng
        self.words = words
        self.cum = list(itertools.accumulate(1.0 / (r ** ZIPF_S) for r in range(1, len(words) + 1)))
        self.population = range(len(words))
        self.tags = range(30, min(230, len(words)))  # 200 tags among the common words
        self.counts: Counter[int] = Counter()

    def draw(self, k: int) -> list[int]:
        picked = self.rng.choices(self.population, cum_weights=self.cum, k=k)
        self.counts.update(picked)
        return picked

    def sentence(self, picked: list[int]) -> str:
        words = [self.words[i] for i in picked]
        rng = self.rng
        if len(words) > 8 and rng.random() < 0.3:
            words[rng.randrange(3, len(words) - 2)] += ","
        if rng.random() < 0.08:
            n = rng.randrange(len(words))
            words[n] = f"**{words[n].rstrip(',')}**"
        return " ".join(words).capitalize() + ("?" if rng.random() < 0.05 else ".")

    def post(self, doc_id: str, now: int) -> tuple[dict[str, Any], list[int]]:
        rng = self.rng
        title_ix = self.draw(rng.randint(*TITLE_WORDS))
        body_ix = self.draw(rng.randint(*BODY_WORDS))
        sentences, at = [], 0
        while at < len(body_ix):
            n = rng.randint(6, 16)
            sentences.append(self.sentence(body_ix[at:at + n]))
            at += n
        paragraphs, at = [], 0
        while at < len(sentences):
            n = rng.randint(2, 5)
            paragraphs.append(" ".join(sentences[at:at + n]))
            at += n
        tag_ix = rng.sample(self.tags, rng.randint(1, 3))
        self.counts.update(tag_ix)
        created = now - rng.randint(0, 3 * 365 * 86_400)
        doc = {
            "_id": doc_id,
            "title": " ".join(self.words[i] for i in title_ix).capitalize(),
            "body": "\n\n".join(paragraphs),
            "tags": [self.words[i] for i in tag_ix],
            "_state": 1,
            "_created": created,
            "_modified": created + rng.randint(0, 30 * 86_400),
            "_cby": ADMIN_NAME,
            "_mby": ADMIN_NAME,
        }
        return doc, title_ix + body_ix


@dataclass
class Dataset:
    data_dir: Path
    marker: dict[str, Any]
    queries: dict[str, list[str]]
    built: bool = False  # the first build was timed by this run


def ensure_data(work: Path, posts: int, queries: int, fresh: bool, idle: float, digest: str) -> Dataset:
    """The data dir for this size: reused when its marker matches. The
    index is built afresh (and timed) when src/quire/searchmod changed
    since its first build."""
    data_dir = work / "data"
    marker_file = work / "marker.json"
    queries_file = work / "queries.json"
    wanted = {"generator": GENERATOR_VERSION, "seed": SEED, "posts": posts, "queries": queries,
              "vocabulary_size": VOCABULARY, "zipf_s": ZIPF_S, "index": INDEX_BODY}
    dataset: Dataset | None = None
    if not fresh and marker_file.exists() and queries_file.exists() and (data_dir / "quire.db").exists():
        with contextlib.suppress(ValueError, OSError):
            marker = json.loads(marker_file.read_text())
            if all(marker.get(k) == v for k, v in wanted.items()):
                print(f"Reusing {data_dir} ({posts:,} posts; --fresh regenerates)")
                dataset = Dataset(data_dir, marker, json.loads(queries_file.read_text()))
    if dataset is None:
        marker_file.unlink(missing_ok=True)
        queries_file.unlink(missing_ok=True)
        if data_dir.exists():
            shutil.rmtree(data_dir)
        work.mkdir(parents=True, exist_ok=True)
        generated, lists = generate(data_dir, posts, queries)
        queries_file.write_text(json.dumps(lists, indent=1) + "\n")
        dataset = Dataset(data_dir, {**wanted, **generated}, lists)
    if dataset.marker.get("searchmod") != digest:
        if "searchmod" in dataset.marker:
            print(f"src/quire/searchmod changed since the first build ({dataset.marker['searchmod']} -> {digest}): "
                  "building the index afresh", flush=True)
        dataset.marker.update(first_build(data_dir, posts, idle), searchmod=digest)
        dataset.built = True
        marker_file.write_text(json.dumps(dataset.marker, indent=2) + "\n")
    else:
        print(f"The index was first built {dataset.marker['built_at']} by the same src/quire/searchmod ({digest})")
    return dataset


def generate(data_dir: Path, posts: int, queries: int) -> tuple[dict[str, Any], dict[str, list[str]]]:
    from quire.content.models import parse_model
    from quire.ids import new_id

    started = time.perf_counter()
    rng = random.Random(SEED)
    words, source = vocabulary(rng)
    writer = Writer(rng, words)
    # The posts whose words make the two-word queries, chosen apart from the text's random numbers.
    pick = random.Random(SEED + 1)
    sampled = set(pick.sample(range(posts), min(posts, 4 * (queries + WARMUP_QUERIES))))
    sample_words: list[list[int]] = []
    print(f"Generating {posts:,} posts in {data_dir} (vocabulary: {len(words):,} words, {source}) ...", flush=True)
    quire = _open_quire(data_dir)
    try:
        quire.models.save(parse_model("posts", POSTS_MODEL))
        now = int(time.time())
        total_bytes = 0

        def rows() -> Any:
            nonlocal total_bytes
            for n in range(posts):
                doc, picked = writer.post(new_id(), now)
                if n in sampled:
                    sample_words.append(picked)
                data = orjson.dumps(doc).decode()
                total_bytes += len(data)
                if (n + 1) % 20_000 == 0:
                    print(f"  {n + 1:,} posts ({time.perf_counter() - started:.1f} s)", flush=True)
                yield doc["_id"], data

        quire.store.ensure_table("content/posts")
        with quire.store.transaction():
            quire.store._writer.executemany('INSERT INTO "content/posts" (id, data) VALUES (?, ?)', rows())
        generate_seconds = time.perf_counter() - started
        print(f"Generated in {generate_seconds:.1f} s; database {db_size(quire) / MB:.1f} MB", flush=True)
    finally:
        quire.close()

    lists = make_queries(random.Random(SEED + 2), words, writer.counts, sample_words, queries + WARMUP_QUERIES)
    tokens = sum(writer.counts.values())
    return {
        "vocabulary": source,
        "distinct_words": len(writer.counts),
        "words_per_post": round(tokens / posts, 1),
        "avg_post_bytes": round(total_bytes / posts),
        "generate_seconds": round(generate_seconds, 1),
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }, lists


def first_build(data_dir: Path, posts: int, idle: float) -> dict[str, Any]:
    """Build the index into empty tables through `quire.search.put`, timed
    (an index left by an earlier build is deleted and the file vacuumed
    first, so the build starts from the posts alone)."""
    from quire.auth.service import Identity

    admin = Identity("admin", key_id=ADMIN_NAME)
    quire = _open_quire(data_dir)
    try:
        if quire.search.indexes.exists() and quire.search.indexes.get(INDEX) is not None:
            asyncio.run(quire.search.delete(INDEX, admin))
            quire.store._writer.execute("VACUUM")
        db_before = db_size(quire)
        print(f"Building the index `{INDEX}` (quire.search.put) ...", flush=True)
        wait_idle(idle, "the first build")
        with Busy() as busy:
            index = asyncio.run(quire.search.put(INDEX, INDEX_BODY, admin))
        if index["documents"] != posts:
            raise RuntimeError(f"the index holds {index['documents']:,} documents, expected {posts:,}")
        db_after = db_size(quire)
        print(f"    {posts:,} documents in {busy.seconds:.1f} s: {posts / busy.seconds:,.0f} docs/s; database "
              f"{db_before / MB:.1f} -> {db_after / MB:.1f} MB ({busy.text})", flush=True)
    finally:
        quire.close()
    return {
        "db_bytes_before_index": db_before,
        "db_bytes_after_index": db_after,
        "build_seconds": round(busy.seconds, 2),
        "build_others_cpu": round(busy.others, 3),
        "build_load": busy.load,
        "build_busy": busy.text,
        "built_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def make_queries(rng: random.Random, words: list[str], counts: Counter[int], sample_words: list[list[int]],
                 count: int) -> dict[str, list[str]]:
    """`count` queries of each kind, from the words as generated (ranked by
    how often they occur in the posts)."""
    ranked = [i for i, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    lo, hi = RANKS
    middle = ranked[lo - 1:hi] or ranked  # ranks lo..hi (tiny runs: whatever there is)
    in_middle = set(middle)
    vocab = set(words)
    one = [words[rng.choice(middle)] + " " for _ in range(count)]
    two: list[str] = []
    docs = list(sample_words)
    rng.shuffle(docs)
    for picked in itertools.cycle(docs):
        candidates = sorted({i for i in picked if i in in_middle})
        if len(candidates) >= 2:
            a, b = rng.sample(candidates, 2)
            two.append(f"{words[a]} {words[b]} ")
            if len(two) == count:
                break
    prefix: list[str] = []
    while len(prefix) < count:
        word, k = words[rng.choice(middle)], rng.choice((3, 4))
        if len(word) > k:
            prefix.append(word[:k])
    long_words = [i for i in middle if len(words[i]) >= 6]
    typo: list[str] = []
    while len(typo) < count:
        word = words[rng.choice(long_words)]
        at = rng.randrange(1, len(word))
        if rng.random() < 0.5:
            wrong = word[:at] + word[at + 1:]
        else:
            wrong = word[:at] + rng.choice([c for c in "abcdefghijklmnopqrstuvwxyz" if c != word[at]]) + word[at + 1:]
        if wrong not in vocab:  # a real typo, not another word
            typo.append(wrong + " ")
    return {"one": one, "two": two, "prefix": prefix, "typo": typo}


def db_size(quire: Any) -> int:
    """The database file's size once the WAL is checkpointed into it."""
    quire.store._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(quire.store.path)


def index_sizes(quire: Any) -> dict[str, int]:
    """Bytes of the index (its live generation's directory, and the queue
    table in the database) and of the text it indexes (the searchable text
    of every document, UTF-8), by part."""
    from quire.searchmod.follow import Marks
    from quire.searchmod.service import DEFAULT, RICH_TEXT, _localized
    from quire.searchmod.text import searchable

    live = Marks(quire.store, INDEX).live()
    folder = quire.search.engine.path(INDEX, live["generation"]) if live else None
    files = [p for p in folder.iterdir() if p.is_file()] if folder is not None else []
    sizes: dict[str, int] = {}
    for path in files:
        kind = {"idx": "postings", "pos": "positions", "term": "term dictionaries", "store": "document store",
                "fieldnorm": "field norms"}.get(path.suffix.lstrip("."), "other")
        sizes[kind] = sizes.get(kind, 0) + path.stat().st_size
    sizes["queue table"] = sum(size for name, size in quire.store._writer.execute(
        "SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE") if name.startswith("sx:queue"))
    index = quire.search.indexes.get(INDEX)
    model = quire.models.get(index["model"])
    rich = {f for f in index["fields"] if model.by_name[f].get("type") in RICH_TEXT}
    text = 0
    for item in quire.content.collection(model).find({"_state": 1}):
        for locale in [DEFAULT, *index["locales"]]:
            text += sum(len(searchable(_localized(item, f, locale, model), html=f in rich).encode())
                        for f in index["fields"] if f in item)
    return {"index": sum(sizes.values()), "text": text, **sizes}


# -- the machine --------------------------------------------------------------


def _loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


def _cpu_of(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes have used."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class Busy:
    """Times a block run in this process and measures how much CPU the rest
    of the machine used meanwhile (another test run, ...): all the busy CPU
    time of /proc/stat but this process's, and the processes that used most."""

    def __enter__(self) -> Busy:
        self.load_before = _loadavg()
        self._procs = process_cpu()
        self._busy = busy_seconds()
        self._own = sum(os.times()[:2])
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._wall
        own = sum(os.times()[:2]) - self._own
        busy = busy_seconds() - self._busy
        self.others = max(0.0, (busy - own) / max(self.seconds, 1e-9) / _cores())
        self.load = [self.load_before, _loadavg()]
        used: dict[str, float] = {}
        for pid, (name, cpu) in process_cpu().items():
            if pid != os.getpid():
                used[name[:60]] = used.get(name[:60], 0.0) + cpu - self._procs.get(pid, (name, 0.0))[1]
        self.top = [(name, round(cpu, 1)) for name, cpu in sorted(used.items(), key=lambda kv: -kv[1])[:2] if cpu >= 0.5]

    @property
    def text(self) -> str:
        top = "; busiest: " + ", ".join(f"`{n}` {c:.1f} s" for n, c in self.top) if self.top else ""
        return (f"other processes used {self.others:.0%} of the CPUs, load {self.load[0]:.2f} → "
                f"{self.load[1]:.2f}{top}")


def wait_idle(limit: float, what: str) -> None:
    """Wait (at most `limit` seconds) until the rest of the machine uses
    under 15% of the CPUs over a second, so the timed part runs alone."""
    deadline = time.monotonic() + limit
    waited = False
    while True:
        before = busy_seconds()
        time.sleep(1.0)
        share = (busy_seconds() - before) / _cores()
        if share < 0.15:
            if waited:
                print(f"    (the machine is idle again: {share:.0%} busy)", flush=True)
            return
        if time.monotonic() > deadline:
            print(f"    (the machine is still {share:.0%} busy after waiting {limit:g} s: timing {what} anyway)",
                  flush=True)
            return
        if not waited:
            print(f"    (waiting for the machine to be idle before timing {what}: {share:.0%} busy)", flush=True)
            waited = True


# -- in-process queries -------------------------------------------------------


@dataclass
class Latency:
    kind: str
    timings_ms: list[float]
    totals: list[int]
    hits: list[int]
    example: str
    busy: Busy | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return statistics.median(self.timings_ms)

    @property
    def p99(self) -> float:
        if len(self.timings_ms) < 100:
            return max(self.timings_ms)
        return statistics.quantiles(self.timings_ms, n=100, method="inclusive")[98]

    @property
    def met(self) -> bool:
        return not self.errors and self.p50 <= P50_TARGET_MS


def time_queries(quire: Any, kind: str, queries: list[str], warmup: int, idle: float) -> Latency:
    from quire.auth.service import Identity

    identity = Identity("admin", key_id=ADMIN_NAME)
    search = quire.search.search
    wait_idle(idle, f"the {KINDS[kind]} queries")
    for q in queries[:warmup]:
        search(INDEX, {"q": q, "limit": LIMIT}, identity)
    timings, totals, hits, errors = [], [], [], []
    with Busy() as busy:
        for q in queries[warmup:]:
            started = time.perf_counter()
            try:
                answer = search(INDEX, {"q": q, "limit": LIMIT}, identity)
            except Exception as exc:  # noqa: BLE001 (reported, not fatal)
                errors.append(f"{q!r}: {exc}")
                continue
            timings.append((time.perf_counter() - started) * 1000)
            totals.append(answer["total"])
            hits.append(len(answer["hits"]))
    result = Latency(kind, timings or [0.0], totals or [0], hits or [0], queries[warmup], busy, errors)
    print(f"    {KINDS[kind]:<10} p50 {result.p50:7.2f} ms  p99 {result.p99:7.2f} ms  "
          f"mean {statistics.fmean(result.timings_ms):7.2f} ms  avg total {statistics.fmean(result.totals):9,.0f}  "
          f"no hits {sum(1 for t in result.totals if not t)}/{len(result.totals)}  ({busy.text})", flush=True)
    for error in errors[:3]:
        print(f"    ERROR: {error}", flush=True)
    return result


# -- the run ------------------------------------------------------------------


def prepare_run(dataset: Dataset, rebuild: bool, idle: float) -> tuple[str, list[Latency], dict[str, Any]]:
    """In one process: rebuild the index (timed), time the queries, make the
    run's public-role key (the public role may search). Answers the key,
    the latencies and figures about the index."""
    from quire.auth.service import Identity

    quire = _open_quire(dataset.data_dir)
    figures: dict[str, Any] = {}
    try:
        admin = Identity("admin", key_id=ADMIN_NAME)
        if rebuild:
            print(f"\nRebuilding the index `{INDEX}` (quire.search.rebuild) ...", flush=True)
            wait_idle(idle, "the rebuild")
            with Busy() as busy:
                index = asyncio.run(quire.search.rebuild(INDEX, admin))
            posts = dataset.marker["posts"]
            if index["documents"] != posts:
                raise RuntimeError(f"the index holds {index['documents']:,} documents, expected {posts:,}")
            figures["rebuild"] = busy
            print(f"    {posts:,} documents in {busy.seconds:.1f} s: {posts / busy.seconds:,.0f} docs/s ({busy.text})",
                  flush=True)
        figures["db_bytes"] = db_size(quire)
        figures["sizes"] = sizes = index_sizes(quire)
        print(f"    database {figures['db_bytes'] / MB:.1f} MB; index {sizes['index'] / MB:.1f} MB for "
              f"{sizes['text'] / MB:.1f} MB of text ({sizes['index'] / sizes['text']:.2f}x): "
              + ", ".join(f"{k} {v / MB:.1f} MB" for k, v in sizes.items() if k not in ("index", "text")),
              flush=True)
        print(f"\nIn-process queries (`quire.search.search`, limit {LIMIT}): {WARMUP_QUERIES} warm-up, then "
              f"{len(dataset.queries['one']) - WARMUP_QUERIES} timed per kind", flush=True)
        latencies = [time_queries(quire, kind, dataset.queries[kind], WARMUP_QUERIES, idle) for kind in KINDS]
        permissions = quire.auth.get_role("public")["permissions"]
        quire.auth.save_role("public", {"permissions": {**permissions, "searchmod/read": True}})
        for key in quire.auth.list_keys():
            if key["name"] == SITE_KEY:
                quire.auth.delete_key(key["_id"])
        site = str(quire.auth.create_key(SITE_KEY, "public")["key"])
    finally:
        quire.close()
    return site, latencies, figures


HTTP_QUERIES = 6_000  # per kind: more than a run requests, so none is asked twice


def http_queries(dataset: Dataset, work: Path) -> list[str]:
    """Queries for wrk, made like the in-process ones (same kinds, same
    frequency ranks) but from word counts taken from the posts as stored,
    HTTP_QUERIES of each kind, shuffled; kept in the work dir."""
    cached = work / "queries-http.json"
    with contextlib.suppress(ValueError, OSError):
        kept = json.loads(cached.read_text())
        if kept.get("count") == HTTP_QUERIES and kept.get("generated") == dataset.marker.get("generated"):
            return list(kept["queries"])
    print(f"Making {4 * HTTP_QUERIES:,} queries for wrk from the posts ...", flush=True)
    quire = _open_quire(dataset.data_dir)
    index: dict[str, int] = {}
    counts: Counter[int] = Counter()
    sampled: list[list[int]] = []
    rng = random.Random(SEED + 4)
    try:
        model = quire.models.get("posts")
        for item in quire.content.collection(model).find({"_state": 1}):
            picked = [index.setdefault(w, len(index)) for w in re.findall(r"[a-z]+", (item["title"] + " " + item.get("body", "")).lower())]
            counts.update(picked)
            if rng.random() < 0.1:
                sampled.append(picked)
    finally:
        quire.close()
    words = list(index)
    lists = make_queries(rng, words, counts, sampled, HTTP_QUERIES)
    mixed = [q for kind in KINDS for q in lists[kind]]
    rng.shuffle(mixed)
    cached.write_text(json.dumps({"count": HTTP_QUERIES, "generated": dataset.marker.get("generated"),
                                  "queries": mixed}) + "\n")
    return mixed


def search_scenario(dataset: Dataset, work: Path, threads: int) -> tuple[Scenario, Path]:
    """wrk over queries of all four kinds in random order, each asked once
    (bench/seq.lua walks the file, each thread its share). Answers the
    scenario and a file of other queries for the warm-up."""
    mixed = http_queries(dataset, work)
    warm, timed = mixed[:2_000], mixed[2_000:]
    queries_file, warm_file = work / "queries-mixed.txt", work / "queries-warmup.txt"
    queries_file.write_text("\n".join(urllib.parse.quote(q, safe="") for q in timed) + "\n")
    warm_file.write_text("\n".join(urllib.parse.quote(q, safe="") for q in warm) + "\n")
    sample = dataset.queries["one"][WARMUP_QUERIES]

    def check(body: Any) -> str | None:
        if not isinstance(body, dict) or not isinstance(body.get("hits"), list):
            return f"expected {{hits, total, ...}}, got {str(body)[:200]}"
        if not body["hits"] or not body.get("total"):
            return f"no hits for {sample!r}"
        return None if len(body["hits"]) <= LIMIT else f"more than {LIMIT} hits"

    name = (f"search, mixed queries ({len(timed):,} distinct queries of the four kinds, random order, each asked "
            f"once, limit {LIMIT})")
    return Scenario(name, ENDPOINT + urllib.parse.quote(sample, safe=""), check, BENCH / "seq.lua",
                    [ENDPOINT, str(queries_file), str(threads)]), warm_file


# -- report -------------------------------------------------------------------


def _mb(count: float) -> str:
    return f"{count / MB:,.1f} MB"


def latency_table(latencies: list[Latency]) -> str:
    lines = ["| kind | example | p50 | p99 | mean | avg `total` | no hits | target | met? |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in latencies:
        note = f"{len(r.errors)} errors" if r.errors else ""
        lines.append(f"| {KINDS[r.kind]} | `{r.example.replace(' ', '␣')}` | {_ms(r.p50)} | {_ms(r.p99)} | "
                     f"{_ms(statistics.fmean(r.timings_ms))} | {statistics.fmean(r.totals):,.0f} | "
                     f"{sum(1 for t in r.totals if not t)} of {len(r.totals)} | p50 ≤ {P50_TARGET_MS:g} ms | "
                     f"{_met(r.met, note)} |")
    return "\n".join(lines)


def build_table(marker: dict[str, Any], rebuild: Busy | None) -> str:
    posts = marker["posts"]
    lines = ["| build | documents | time | docs/s | target | met? |", "|---|---:|---:|---:|---|---|"]
    rate = posts / marker["build_seconds"]
    lines.append(f"| first build (`quire.search.put` into empty tables), measured when the data was generated, "
                 f"{marker['built_at']} | {posts:,} | {marker['build_seconds']:.1f} s | {rate:,.0f} | "
                 f"≥ {RATE_TARGET:,.0f} docs/s | {_met(rate >= RATE_TARGET)} |")
    if rebuild is not None:
        rate = posts / rebuild.seconds
        lines.append(f"| rebuild (`quire.search.rebuild`: every document replaced), this run | {posts:,} | "
                     f"{rebuild.seconds:.1f} s | {rate:,.0f} | ≥ {RATE_TARGET:,.0f} docs/s | "
                     f"{_met(rate >= RATE_TARGET)} |")
    return "\n".join(lines)


def size_text(marker: dict[str, Any], figures: dict[str, Any]) -> str:
    before, after = marker["db_bytes_before_index"], marker["db_bytes_after_index"]
    text = (f"**Index size** (target: at most {SIZE_TARGET:g}x the indexed text): the database file (WAL "
            f"checkpointed) went from {_mb(before)} of posts to {_mb(after)} with the first build (the index "
            "itself is a directory beside it)")
    if "sizes" in figures:
        sizes = figures["sizes"]
        ratio = sizes["index"] / max(sizes["text"], 1)
        text += (f"; the index (the live generation's files, and the queue table) takes {_mb(sizes['index'])} "
                 f"for {_mb(sizes['text'])} of indexed text (the searchable text of every document, UTF-8): "
                 f"**{ratio:.2f}x**, target met: {_met(ratio <= SIZE_TARGET)}. Parts: "
                 + ", ".join(f"{k} {_mb(v)}" for k, v in sizes.items() if k not in ("index", "text")))
    return text + "."


def wrk_table(outcome: Outcome) -> str:
    lines = ["| scenario | req/s | p50 | p99 | non-2xx | target | met? |", "|---|---:|---:|---:|---:|---|---|"]
    target = f"≥ {RPS_TARGET:,.0f} req/s, p99 ≤ {HTTP_P99_TARGET_MS:g} ms"
    if outcome.result is None:
        lines.append(f"| {outcome.scenario.name} | — | — | — | **error**: {outcome.error} | {target} | no |")
    else:
        r = outcome.result
        met = r.rps >= RPS_TARGET and r.p99 <= HTTP_P99_TARGET_MS and not r.non2xx
        lines.append(f"| {outcome.scenario.name} | {r.rps:,.0f} | {_ms(r.p50)} | {_ms(r.p99)} | {r.non2xx:,} | "
                     f"{target} | {_met(met)} |")
    return "\n".join(lines)


def cpu_text(figures: dict[str, Any]) -> str:
    """The workers' CPU per request: what the machine's load does not change."""
    cpu = figures.get("server_cpu")
    if not cpu:
        return ""
    return (f"The two workers used **{cpu:.2f} ms of CPU per request** over the timed run (their /proc "
            f"counters): with both cores to themselves (wrk elsewhere) they would serve at most about "
            f"{2_000 / cpu:,.0f} req/s.\n\n")


def machine_notes(marker: dict[str, Any], fresh_build: bool, rebuild: Busy | None, latencies: list[Latency],
                  wrk_load: list[float] | None) -> tuple[str, str]:
    """A list of what the rest of the machine did during each timed part,
    and a sentence saying whether it was busy."""
    rows = [(f"first build ({marker['built_at']})", marker.get("build_busy", "?"))]
    shares = [marker.get("build_others_cpu", 0.0)] if fresh_build else []
    if rebuild is not None:
        rows.append(("rebuild", rebuild.text))
        shares.append(rebuild.others)
    for r in latencies:
        if r.busy is not None:
            rows.append((f"{KINDS[r.kind]} queries", r.busy.text))
            shares.append(r.busy.others)
    if wrk_load is not None:
        rows.append(("wrk", f"load {wrk_load[0]:.2f} → {wrk_load[1]:.2f} (wrk and the server use the CPUs)"))
    listing = "\n".join(f"- {label}: {text}" for label, text in rows)
    worst = max(shares, default=0.0)
    if worst < 0.1:
        note = "The machine was otherwise idle during this run's timed in-process parts (under 10% of the CPUs)."
    else:
        note = (f"**The machine was busy:** other processes used up to {worst:.0%} of the CPUs during this run's "
                "timed in-process parts; those figures are lower than on an idle machine.")
    return listing, note


def source_digest() -> str:
    """A digest of src/quire/searchmod, to tell runs of different code apart
    when it is not committed."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "src" / "quire" / "searchmod").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def search_section(args: argparse.Namespace, dataset: Dataset, latencies: list[Latency], rebuild: Busy | None,
                   figures: dict[str, Any], outcome: Outcome | None, machine: tuple[str, str],
                   changed: bool) -> str:
    m = dataset.marker
    kinds = "; ".join(f"**{KINDS[k]}**: {KIND_NOTES[k]}" for k in KINDS)
    wrk = ""
    if outcome is not None:
        wrk = (f"**Over HTTP:** `quire serve --workers {args.workers}`, driven by "
               f"`wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s` on the same machine after a "
               f"{args.warmup:g} s warm-up, `GET {ENDPOINT}<query>` with a key of the public role "
               "(`searchmod/read`); `bench/seq.lua` walks a file of distinct queries made from the posts like the "
               "in-process ones (the four kinds in equal shares, shuffled), each thread its share, so no query is "
               "asked twice in the timed run (the warm-up asks 2,000 others); nothing caches search answers.\n\n"
               f"{wrk_table(outcome)}\n\n{render_details([outcome], None)}\n\n{cpu_text(figures)}")
    return (
        f"## {SECTION_TITLE}\n\n"
        f"`.venv/bin/python bench/search.py` at {_git_revision()}; src/quire/searchmod digest "
        f"{m['searchmod']}{' (**it changed during the run**: the figures may mix two versions)' if changed else ''}. "
        f"{m['posts']:,} published posts of model `posts` (title, markdown body, tags; "
        f"~{m['words_per_post']:.0f} words and ~{m['avg_post_bytes']:,} bytes of JSON each) written straight "
        f"into the store. The text is seeded and drawn from {VOCABULARY:,} words ({m['vocabulary']}) with "
        f"Zipf frequencies (the word of rank r has weight 1/r); {m['distinct_words']:,} distinct words occur. "
        f"Index `{INDEX}`: `{json.dumps(INDEX_BODY, separators=(', ', ': '))}`.\n\n"
        f"**Building the index** ({m['posts']:,} documents):\n\n{build_table(m, rebuild)}\n\n"
        f"{size_text(m, figures)}\n\n"
        f"**Query latency in-process:** `quire.search.search(\"{INDEX}\", {{\"q\": q, \"limit\": {LIMIT}}}, "
        f"admin)` timed around the call, one at a time, {WARMUP_QUERIES} warm-up queries then "
        f"{len(latencies[0].timings_ms):,} timed ones per kind. The query words come from the generated text "
        f"(frequency ranks counted while writing it), not from the index. {kinds}. `total` is the answer's "
        f"exact count of matching documents; ␣ is a space.\n\n"
        f"{latency_table(latencies)}\n\n{wrk}"
        f"**The machine** during the timed parts (CPU used by other processes, from /proc):\n\n"
        f"{machine[0]}\n\n{machine[1]}\n"
    )


# -- main ---------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark of full-text search (see bench/README.md).")
    parser.add_argument("--posts", type=int, default=STANDARD_POSTS, help="posts to generate (default 100000)")
    parser.add_argument("--queries", type=int, default=QUERIES, help="timed queries per kind (default 500)")
    add_load_options(parser, DEFAULT_WORK, SECTION_TITLE)
    parser.add_argument("--no-rebuild", action="store_true",
                        help="do not re-time the build (report only the first build, with its date)")
    parser.add_argument("--no-http", action="store_true", help="skip the server and wrk")
    parser.add_argument("--wait-idle", type=float, default=60,
                        help="before each timed part, wait up to this many seconds for other processes to "
                             "leave the CPUs (default 60, 0: do not wait)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if args.posts < 100 or args.queries < 1:
        parser.error("--posts must be at least 100 and --queries at least 1")
    check_load_options(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    if not args.no_http and wrk_missing("; or --no-http"):
        return 2
    work: Path = args.work.resolve()
    outcome: Outcome | None = None
    wrk_load: list[float] | None = None
    server_cpu: float | None = None  # CPU ms the workers spent per request
    try:
        digest = source_digest()
        dataset = ensure_data(work, args.posts, args.queries, args.fresh, args.wait_idle, digest)
        site_key, latencies, figures = prepare_run(dataset, not args.no_rebuild, args.wait_idle)
        if not args.no_http:
            server = Server(dataset.data_dir, free_port(), args.workers, work / "server.log")
            try:
                server.start()
                pids = server.wait_ready()
                print(f"\nServing on {server.base}: worker pids {pids}", flush=True)
                wait_idle(args.wait_idle, "wrk")
                scenario, warm_file = search_scenario(dataset, work, args.threads)
                if args.warmup > 0:  # other queries: the timed run asks each of its own once
                    run_wrk(args, site_key, server.base + "/", scenario.script, [ENDPOINT, str(warm_file),
                                                                                 str(args.threads)], args.warmup)
                load = _loadavg()
                cpu_before = _cpu_of(pids)
                outcome = run_scenario(argparse.Namespace(**{**vars(args), "warmup": 0}), work, server.base,
                                       site_key, scenario, 1)
                if outcome.result is not None and outcome.result.requests:
                    server_cpu = (_cpu_of(pids) - cpu_before) * 1000 / outcome.result.requests
                if outcome.error:
                    print(f"    ERROR: {outcome.error}", flush=True)
                wrk_load = [load, _loadavg()]
            finally:
                server.stop()
    except KeyboardInterrupt:
        print("\nInterrupted; the server was stopped.", file=sys.stderr)
        return 130

    rebuild: Busy | None = figures.get("rebuild")
    figures["server_cpu"] = server_cpu
    m = dataset.marker
    changed = source_digest() != digest
    if changed:
        print(f"\nWARNING: src/quire/searchmod changed during the run ({digest} -> {source_digest()}); "
              "the figures may mix two versions of the code.")
    machine = machine_notes(m, dataset.built, rebuild, latencies, wrk_load)
    print("\n" + build_table(m, rebuild) + "\n\n" + size_text(m, figures) + "\n\n" + latency_table(latencies))
    if outcome is not None:
        print("\n" + wrk_table(outcome) + "\n\n" + render_details([outcome], None) + "\n\n" + cpu_text(figures))
    print("\n" + machine[0] + "\n\n" + machine[1])
    problems = server_log_problems(work / "server.log") if outcome is not None else []
    if problems:
        print(f"\nThe server logged {len(problems)} problem line(s) (see {work / 'server.log'}):")
        print("\n".join(problems[:10]))

    standard = args.posts == STANDARD_POSTS and args.queries == QUERIES
    docs: Path | None = None if args.no_docs else args.docs or (DEFAULT_DOCS if standard else None)
    if docs is not None:
        section = search_section(args, dataset, latencies, rebuild, figures, outcome, machine, changed)
        update_doc(docs, machine_paragraph(), section, SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {docs}")
    elif not args.no_docs:
        print(f"\nNot a standard-size run: {DEFAULT_DOCS.relative_to(ROOT)} left as it is (--docs PATH writes one).")

    failed = any(r.errors for r in latencies)
    failed = failed or (outcome is not None and (outcome.error is not None or outcome.result is None
                                                 or outcome.result.non2xx > 0))
    rates = [m["posts"] / m["build_seconds"]] + ([m["posts"] / rebuild.seconds] if rebuild else [])
    missed = not all(r.met for r in latencies) or any(rate < RATE_TARGET for rate in rates)
    if failed:
        return 1
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
