#!/usr/bin/env python3
"""A scripted assistant session (docs/ai.md): the MCP SDK's own client,
over Streamable HTTP to `quire serve --workers 2` (SQLite), creating
`--drafts` drafts one tool call each (`create_item`), then reading them
back (`get_item`). Measured: each call's time (p50, p95, p99 as the
client sees it). Checked afterwards, in the data folder: every item is a
draft (`_state` 0, none published), each has its revision and an audit
entry naming the assistant.

    .venv/bin/python bench/assistants.py               # 100 drafts; writes docs/benchmarks.md
    .venv/bin/python bench/assistants.py --drafts 20 --no-docs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import DEFAULT_DOCS, ROOT, Server, free_port, machine_paragraph, update_doc  # noqa: E402

SECTION_TITLE = "Assistants: a scripted MCP session"
STANDARD = {"drafts": 100}
WORK = ROOT / "bench" / ".work" / "assistants"


def _api(base: str, key: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"api-key": key, "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


async def session(base: str, key: str, drafts: int) -> tuple[list[float], list[float], list[str]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation

    writes: list[float] = []
    reads: list[float] = []
    ids: list[str] = []
    http = httpx2.AsyncClient(headers={"api-key": key}, timeout=30)
    async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http),
                            client_info=Implementation(name="bench-assistant", version="1")) as client:
        await client.call_tool("list_models", {})  # the first call of a process pays for schemas once
        for n in range(drafts):
            started = time.perf_counter()
            result = await client.call_tool("create_item", {"model": "notes", "data": {
                "title": f"Draft {n}", "body": f"<p>Written by an assistant, number {n}.</p>"}})
            writes.append(time.perf_counter() - started)
            assert not result.is_error, result.content
            ids.append(result.structured_content["saved"][0]["_id"])
        for item_id in ids:
            started = time.perf_counter()
            result = await client.call_tool("get_item", {"model": "notes", "id": item_id})
            reads.append(time.perf_counter() - started)
            assert not result.is_error, result.content
    return writes, reads, ids


def check(data: Path, ids: list[str]) -> dict[str, int]:
    """What the session left, read in the data folder once the server is gone."""
    from quire.app import Quire
    from quire.audit.service import AuditQuery, AuditService
    from quire.config import load_settings
    from quire.revisions.service import RevisionService

    quire = Quire(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        coll = quire.content.models.collection(quire.content.models.get("notes"))
        docs = [coll.get(i) for i in ids]
        revisions = sum(1 for i in ids if quire.get(RevisionService).history("content/notes", i)[1] >= 1)
        entries, _ = quire.get(AuditService).find(AuditQuery(action="item.create", resource="content/notes"),
                                                  limit=len(ids) + 10)
        named = sum(1 for e in entries if "via MCP (bench-assistant)" in str(e["who"].get("name")))
        return {"drafts": sum(1 for d in docs if d is not None and d.get("_state") == 0),
                "published": sum(1 for d in docs if d is not None and d.get("_state") == 1),
                "with_revision": revisions, "audit_named": named}
    finally:
        quire.close()


def ms(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drafts", type=int, default=STANDARD["drafts"])
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    data = WORK / "data"
    data.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIRE_")}
    key = subprocess.run([sys.executable, "-m", "quire", "keys", "create", "--name", "assistant", "--role", "admin",
                          "--data", str(data)], env=env, capture_output=True, text=True,
                         check=True).stdout.split()[-1]
    load = [os.getloadavg()[0]]
    server = Server(data, free_port(), 2, WORK / "server.log",
                    env={"QUIRE_ASSISTANTS_WRITES_PER_MINUTE": str(args.drafts * 2)})
    server.start()
    try:
        server.wait_ready()
        _api(server.base, key, "PUT", "/api/system/models/notes", {"name": "notes", "type": "collection", "fields": [
            {"name": "title", "type": "text", "required": True}, {"name": "body", "type": "wysiwyg"}]})
        started = time.perf_counter()
        writes, reads, ids = asyncio.run(session(server.base, key, args.drafts))
        took = time.perf_counter() - started
        load.append(os.getloadavg()[0])
    finally:
        server.stop()
    found = check(data, ids)
    assert found == {"drafts": args.drafts, "published": 0, "with_revision": args.drafts,
                     "audit_named": args.drafts}, found
    lines = [
        f"## {SECTION_TITLE}",
        "",
        f"`bench/assistants.py`: the MCP SDK's own client (Streamable HTTP, one connection) against `quire serve "
        f"--workers 2` (SQLite) creates {args.drafts} drafts, one `create_item` call each, then reads each back "
        f"(`get_item`); {took:.1f} s in all. Load average {', '.join(f'{x:.1f}' for x in load)}.",
        "",
        "| Tool call | p50 | p95 | p99 |",
        "|---|---|---|---|",
        f"| `create_item` (a draft, its revision, audit entry and preview link) | {ms(writes, 50):.1f} ms | "
        f"{ms(writes, 95):.1f} ms | {ms(writes, 99):.1f} ms |",
        f"| `get_item` | {ms(reads, 50):.1f} ms | {ms(reads, 95):.1f} ms | {ms(reads, 99):.1f} ms |",
        "",
        f"Checked in the data folder afterwards: {found['drafts']} of {args.drafts} items are drafts (`_state` 0), "
        f"{found['published']} published, {found['with_revision']} have their revision and {found['audit_named']} "
        "an audit entry naming the assistant (`assistant via MCP (bench-assistant)`). A call's time is the "
        "client's: its JSON-RPC request over HTTP, the key checked, the tool's work and the answer.",
    ]
    section = "\n".join(lines) + "\n"
    print(section)
    if args.drafts == STANDARD["drafts"] and not args.no_docs:
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)


if __name__ == "__main__":
    main()
