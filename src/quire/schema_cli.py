"""`quire schema snapshot | diff | apply`: the command line of schema.py
(docs/moving.md#schema)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from quire import schema
from quire.auth.service import Identity
from quire.errors import ApiError

# The command line is trusted like the server's owner: it writes as admin.
ADMIN = Identity("admin", key_id="cli", kind="system")


def _read(name: str) -> Any:
    try:
        raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise ApiError(f"cannot read {name}: {exc.strerror}") from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiError(f"{name} is not JSON: {exc}") from None


def _write(out: str | None, data: bytes) -> None:
    if out not in (None, "-") and not Path(out).parent.is_dir():
        raise ApiError(f"{Path(out).parent} is not a folder: the file {out} cannot be written there")
    if out in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        Path(out).write_bytes(data)


def cmd_schema(args: argparse.Namespace) -> int:
    if args.schema_cmd == "snapshot" and not args.load_settings(args).store.url \
            and not args.load_settings(args).db_path.is_file():
        print(f"error: {args.data} holds no site: check --data", file=sys.stderr)
        return 2
    quire = args.open_services(args)
    try:
        if args.schema_cmd == "snapshot":
            _write(args.out, schema.canonical(schema.snapshot(quire)))
            return 0
        if args.schema_cmd == "diff":
            plan = schema.diff(quire, _read(args.file))
            if args.out:
                _write(args.out, schema.canonical(plan.to_json()))
            print(plan.describe())
            print(f"base: {plan.base}")
            return 0
        return _apply(quire, args)
    finally:
        quire.close()


def _apply(quire: Any, args: argparse.Namespace) -> int:
    given = _read(args.file)
    if isinstance(given, dict) and given.get(schema.FORMAT_KEY) == schema.FORMAT:
        if not args.base:
            print("error: a snapshot is applied against the base `quire schema diff` printed (--base HASH), "
                  "or give the plan it wrote (--out)", file=sys.stderr)
            return 2
        plan = schema.Plan(args.base, given, [])
    else:
        plan = schema.read_plan(given)
    done = asyncio.run(schema.apply(quire, plan, ADMIN, allow_data_loss=args.allow_data_loss))
    for step in done.steps:
        print(step.describe())
    print(f"Applied {len(done.steps)} changes" if done.steps else "No changes: the site has this schema.")
    return 0


def add_parser(sub: Any, common: argparse.ArgumentParser, open_services: Callable[[argparse.Namespace], Any],
               load_settings: Callable[[argparse.Namespace], Any]) -> None:
    parser = sub.add_parser("schema", help="the schema as JSON for git: snapshot, diff, apply",
                            description="The site's schema (models, locales, roles, page settings, search "
                                        "indexes, forms, webhooks) as stable JSON, the plan to make a site's "
                                        "schema another's, and applying it. See docs/moving.md#schema.")
    actions = parser.add_subparsers(dest="schema_cmd", required=True, metavar="ACTION")
    snap = actions.add_parser("snapshot", parents=[common], help="write the schema as JSON")
    snap.add_argument("--out", help="file to write (default: standard output)")
    diff = actions.add_parser("diff", parents=[common], help="show what applying a snapshot would change",
                              description="Compare a snapshot with this site: what would be added, changed "
                                          "and removed, how many documents each change touches, which lose "
                                          "data. --out writes the plan for `quire schema apply`.")
    diff.add_argument("file", help="a snapshot (- for standard input)")
    diff.add_argument("--out", help="write the plan (JSON) here")
    apply = actions.add_parser("apply", parents=[common], help="make this site's schema a snapshot's",
                               description="Apply a plan of `quire schema diff --out` (or a snapshot with "
                                           "--base, the hash diff printed): refused when the site changed since "
                                           "the plan was made, or when a change loses data without "
                                           "--allow-data-loss. All of it in one transaction.")
    apply.add_argument("file", help="a plan, or a snapshot with --base")
    apply.add_argument("--base", help="with a snapshot: the base hash `quire schema diff` printed")
    apply.add_argument("--allow-data-loss", action="store_true",
                       help="make changes that lose data (models, fields or forms removed with their values)")
    parser.set_defaults(func=cmd_schema, open_services=open_services, load_settings=load_settings)
