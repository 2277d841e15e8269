#!/usr/bin/env python3
"""The ceiling of Quire's own stack, for bench/run.py: granian, started
exactly as `quire serve` starts it (`quire.cli.granian_server`: the same
interface, loop, workers and options), serving an ASGI app that does
nothing but send answers recorded from Quire: the same status, headers and
body, chosen by the request path's prefix. What Quire's answers cost beyond
this is Quire's own work (routing, keys, parameters, the store, rendering).

    python bench/ceiling.py --answers FILE --port P --workers 2 --quiet

FILE is JSON: a list of {"prefix": "/api/...", "status": 200,
"headers": [[name, value], ...], "body": "<base64>"}; the longest matching
prefix answers, any other path gets a bare 404.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
from pathlib import Path
from typing import Any

import orjson

ANSWERS_ENV = "CEILING_ANSWERS"  # not QUIRE_*: the benchmark clears those from the servers' environment

Message = dict[str, Any]


def load_answers(path: Path) -> list[tuple[str, Message, Message]]:
    """(prefix, start message, body message) per recorded answer, longest
    prefix first; the messages are made once and sent as they are."""
    table = []
    for entry in orjson.loads(path.read_bytes()):
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in entry["headers"]]
        start = {"type": "http.response.start", "status": entry["status"], "headers": headers}
        body = {"type": "http.response.body", "body": base64.b64decode(entry["body"])}
        table.append((entry["prefix"], start, body))
    return sorted(table, key=lambda t: -len(t[0]))


def app_from_env() -> Any:
    """The factory granian's workers call."""
    table = load_answers(Path(os.environ[ANSWERS_ENV]))
    not_found_start = {"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]}
    not_found_body = {"type": "http.response.body", "body": b""}

    async def app(scope: Message, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            for prefix, start, body in table:
                if path.startswith(prefix):
                    await send(start)
                    await send(body)
                    return
            await send(not_found_start)
            await send(not_found_body)
        elif scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    return app


def main(argv: list[str] | None = None) -> int:
    from quire.cli import granian_server

    parser = argparse.ArgumentParser(description="Serve recorded answers with granian as `quire serve` would.")
    parser.add_argument("--answers", type=Path, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    load_answers(args.answers)  # a bad file fails here, not in every worker
    os.environ[ANSWERS_ENV] = str(args.answers.resolve())
    # the workers import this module by name
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent),
                                                             os.environ.get("PYTHONPATH")]))
    print(f"Ceiling serving {args.answers} on http://{args.host}:{args.port}", flush=True)
    granian_server("ceiling:app_from_env", args.host, args.port, args.workers, args.quiet).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
