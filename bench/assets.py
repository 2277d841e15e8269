#!/usr/bin/env python3
"""Benchmark of the image pipeline (`make bench`, after the content one).

Uploads a 4000x3000 photo-like JPEG, serves it with `quire serve --workers 2`
and measures: the first generation of a 400 px thumbnail (sequential
requests, each with a new `t` so each one renders), and with wrk the cached
image (`o=1`) and the URL answer (`o=0`). Writes the "Assets" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import (  # noqa: E402  (a sibling script, not a package)
    DEFAULT_DOCS,
    Server,
    free_port,
    http_get,
    machine_paragraph,
    parse_wrk,
    run_wrk,
    update_doc,
)

BENCH = Path(__file__).resolve().parent
FIRST_TARGET_MS = 100.0
CACHED_TARGET_RPS = 5000.0


def photo(width: int = 4000, height: int = 3000) -> bytes:
    """A JPEG with a photo's amount of detail (gradients, shapes and noise),
    so decoding costs what a real photo costs."""
    base = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    draw = ImageDraw.Draw(base)
    for i in range(40):
        x, y = (i * 977) % width, (i * 613) % height
        draw.ellipse([x, y, x + 400, y + 300], fill=((i * 53) % 256, (i * 97) % 256, (i * 31) % 256))
    noise = Image.effect_noise((width, height), 40).convert("RGB")
    image = Image.blend(base, noise, 0.25).filter(ImageFilter.SMOOTH)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90)
    return out.getvalue()


def prepare(data: Path) -> tuple[str, str, int]:
    from quire.app import Quire
    from quire.assets.service import Upload
    from quire.auth.service import Identity
    from quire.config import load_settings

    if data.exists():
        shutil.rmtree(data)
    quire = Quire(load_settings(data, env={}))
    try:
        picture = photo()
        created = asyncio.run(quire.assets.upload([Upload("photo.jpg", picture)], {}, Identity("admin", key_id="bench")))
        key = quire.auth.create_key("bench", "admin")["key"]
        return created[0]["_id"], key, len(picture)
    finally:
        quire.close()


def first_generation(base: str, key: str, asset_id: str, rounds: int) -> list[float]:
    timings = []
    for i in range(rounds):
        url = f"{base}/api/assets/image/{asset_id}?w=400&o=1&mime=jpeg&t=first-{i}-{time.time_ns()}"
        start = time.perf_counter()
        status, body = http_get(url, key)
        elapsed = (time.perf_counter() - start) * 1000
        if status != 200 or not body:
            raise RuntimeError(f"first generation failed: {status}")
        timings.append(elapsed)
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Image pipeline benchmark (see bench/README.md).")
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=20, help="first-generation requests (default 20)")
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args(argv)
    work = BENCH / ".work" / "assets"
    work.mkdir(parents=True, exist_ok=True)
    asset_id, key, size = prepare(work / "data")
    server = Server(work / "data", free_port(), args.workers, work / "server.log")
    results: dict[str, Any] = {}
    try:
        server.start()
        server.wait_ready()
        base = server.base
        firsts = first_generation(base, key, asset_id, args.rounds)
        results["first"] = firsts
        cached = f"{base}/api/assets/image/{asset_id}?w=400&o=1&mime=jpeg"
        url_answer = f"{base}/api/assets/image/{asset_id}?w=400&mime=jpeg"
        for url in (cached, url_answer):
            http_get(url, key)  # generate once
            run_wrk(args, key, url, None, [], 2)  # warm-up
        results["cached"] = parse_wrk(run_wrk(args, key, cached, None, [], args.duration))
        results["url"] = parse_wrk(run_wrk(args, key, url_answer, None, [], args.duration))
    finally:
        server.stop()

    first_p50 = statistics.median(results["first"])
    cached, url = results["cached"], results["url"]
    rows = [
        f"| first generation of a 400 px thumbnail from a 4000x3000 JPEG ({size / 1e6:.1f} MB), "
        f"{args.rounds} sequential requests | — | {first_p50:.1f} ms | {max(results['first']):.1f} ms (max) "
        f"| p50 ≤ {FIRST_TARGET_MS:.0f} ms | {'yes' if first_p50 <= FIRST_TARGET_MS else '**no**'} |",
        f"| cached image, `o=1` (bytes, ETag) | {cached.rps:,.0f} | {cached.p50:.2f} ms | {cached.p99:.2f} ms "
        f"| ≥ {CACHED_TARGET_RPS:,.0f} req/s | {'yes' if cached.rps >= CACHED_TARGET_RPS else '**no**'} |",
        f"| URL answer, `o=0` (text/plain) | {url.rps:,.0f} | {url.p50:.2f} ms | {url.p99:.2f} ms | — | — |",
    ]
    table = "| scenario | req/s | p50 | p99 | target | met? |\n|---|---:|---:|---:|---|---|\n" + "\n".join(rows)
    non2xx = cached.non2xx + url.non2xx
    print(table)
    if non2xx:
        print(f"non-2xx answers: {non2xx}")
    if not args.no_docs:
        section = (
            "## Assets\n\n"
            f"`make bench` (bench/assets.py): one uploaded 4000x3000 JPEG, `quire serve --workers "
            f"{args.workers}`, wrk `-t{args.threads} -c{args.connections} -d{args.duration:g}s` on the same "
            "machine after a 2 s warm-up. First generation is timed at the client, one request at a time, "
            "each with a new `t` so each one decodes, resizes and encodes.\n\n" + table + "\n"
        )
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, "Assets")
        print(f"Wrote the Assets section of {DEFAULT_DOCS}")
    return 1 if non2xx else 0


if __name__ == "__main__":
    raise SystemExit(main())
