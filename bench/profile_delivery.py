#!/usr/bin/env python3
"""CPU time of a content save and its webhook delivery, in process: the
saves of `profile_save.py` with one webhook following `content.*` to a
receiver in a process of its own, every delivery sent by the jobs runner's
threads of this process; the process's CPU clock (all its threads) from
the first update until every delivery is recorded, per save. `--without
webhook` gives the same without the webhook, so the difference is what a
delivery costs the process that sends it. `prof` prints a pyinstrument
profile of the sending threads' work instead (`pip install pyinstrument`).

    .venv/bin/python bench/profile_delivery.py [--without webhook] [--saves N] [--prof]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from quire.app import Quire
from quire.config import load_settings
from quire.content.models import parse_model
from quire.jobs import DONE, JOBS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_save import FIELDS, create_items  # noqa: E402  (a sibling script, not a package)

RECEIVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *args): pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


async def run(quire: Quire, count: int, hook: bool, port: int) -> float:
    """Milliseconds of CPU per update and its delivery."""
    identity = quire.auth.identify(str(quire.auth.create_key("bench", "admin")["key"]))
    if hook:
        await quire.webhooks.create({"name": "bench", "url": f"http://127.0.0.1:{port}/hook", "events": ["content.*"]})
    ids = await create_items(quire, identity)
    jobs = quire.store.collection(JOBS)
    expected = 200 + count if hook else 0
    while hook and jobs.count({"state": DONE}) < 200:
        await asyncio.sleep(0.05)
    started = time.process_time()
    for n in range(count):
        await quire.content.save("posts", {"_id": random.choice(ids), "title": f"u{n}", "rating": n}, identity)
        if n % 20 == 0:
            await asyncio.sleep(0)  # as a server's loop, between requests
    while hook and jobs.count({"state": DONE}) < expected:
        await asyncio.sleep(0.01)
    return (time.process_time() - started) / count * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--without", default="")
    parser.add_argument("--saves", type=int, default=2000)
    parser.add_argument("--prof", action="store_true")
    args = parser.parse_args()
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    assert receiver.stdout is not None
    port = int(receiver.stdout.readline())
    env = {"QUIRE_SERVER_QUIET": "true", "QUIRE_WEBHOOKS_ALLOW_HOSTS": "127.0.0.1"}
    quire = Quire(load_settings(Path(tempfile.mkdtemp()) / "data", env=env))
    quire.models.save(parse_model("posts", {"fields": FIELDS}))
    hook = "webhook" not in args.without
    try:
        if args.prof:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005, async_mode="disabled")
            profiler.start()
            asyncio.run(run(quire, args.saves, hook, port))
            profiler.stop()
            print(profiler.output_text(unicode=False, color=False))
        else:
            ms = asyncio.run(run(quire, args.saves, hook, port))
            print(f"{ms:.3f} ms of CPU a save{' and its delivery' if hook else ''}")
    finally:
        quire.close()
        receiver.kill()


if __name__ == "__main__":
    main()
