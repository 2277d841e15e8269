"""`quire mcp`: the MCP server over stdio, for an assistant on this machine
(docs/ai.md): it starts the command and speaks the protocol on its
standard input and output. It calls with an API key like any other client
(`--key`, or `QUIRE_API_KEY` in its environment), and the key's role and the
assistants' rules apply as over HTTP."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from quire.errors import ApiError


def cmd_mcp(args: argparse.Namespace) -> int:
    key = args.key or os.environ.get("QUIRE_API_KEY", "")
    if not key:
        print("error: quire mcp needs an API key: --key KEY or QUIRE_API_KEY", file=sys.stderr)
        return 2
    # stdout is the protocol's: whatever is logged goes to stderr
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
    quire = args.open_services(args)
    try:
        if not quire.settings.assistants.enabled:
            print("error: assistants are turned off ([assistants] enabled = false)", file=sys.stderr)
            return 2
        try:
            identity = quire.auth.identify(key)
        except ApiError:
            print("error: the API key is not known here", file=sys.stderr)
            return 2
        asyncio.run(_serve(quire, identity))
    finally:
        quire.close()
    return 0


async def _serve(quire: Any, identity: Any) -> None:
    from quire.assistants.server import CALLER, build_server
    from quire.assistants.service import Caller

    CALLER.set(Caller(identity, quire, "a local assistant"))
    await build_server().run_stdio_async()


def add_parser(sub: Any, common: argparse.ArgumentParser, open_services: Callable[[argparse.Namespace], Any]) -> None:
    mcp = sub.add_parser("mcp", parents=[common], help="serve assistants over MCP on stdin/stdout",
                         description="The MCP server over stdio, for an assistant on this machine (docs/ai.md).")
    mcp.add_argument("--key", help="the API key the assistant calls with (else QUIRE_API_KEY)")
    mcp.set_defaults(func=cmd_mcp, open_services=open_services)
