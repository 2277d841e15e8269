"""`quire l10n export|import`: translation files from and into the store,
through the same service functions as the API."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from quire.auth.service import Identity
from quire.errors import BadRequest
from quire.l10n.formats import FORMATS

# The command line is trusted like the server's owner: it writes as admin.
ADMIN = Identity("admin", key_id="cli", kind="system")


def _quire(args: argparse.Namespace) -> Any:
    """The services, opened by the main command line (`open_services`)."""
    return args.open_services(args)


def cmd_export(args: argparse.Namespace) -> int:
    quire = _quire(args)
    try:
        service = quire.l10n
        if args.format == "json" or args.locale:
            found = service.export(args.name, args.format, args.locale, ADMIN)
            if args.out is None:
                sys.stdout.buffer.write(found.body)
                sys.stdout.flush()
                return 0
            out = Path(args.out)
            target = out / found.filename if out.is_dir() else out
            _write(target, found.body)
            print(f"Wrote {target}")
            return 0
        # one file per locale of the project, into a directory
        if args.out is None:
            raise BadRequest(f"--out DIR is needed to export every locale as {args.format} (or give --locale)")
        project = service.get(args.name, ADMIN)
        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        names = []
        for locale in project["locales"]:
            found = service.export(args.name, args.format, locale, ADMIN)
            _write(folder / found.filename, found.body)
            names.append(found.filename)
        print(f"Wrote {len(names)} files to {folder}: {', '.join(names)}")
        return 0
    finally:
        quire.close()


def _write(path: Path, body: bytes) -> None:
    try:
        path.write_bytes(body)
    except OSError as exc:
        raise BadRequest(f"cannot write {path}: {exc.strerror}") from None


@dataclass
class Plan:
    """One file to import, with what was worked out about it."""

    path: Path
    raw: bytes
    fmt: str
    project: str
    locale: str | None


def _plan(path: Path, args: argparse.Namespace) -> Plan:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadRequest(f"cannot read {path}: {exc.strerror}") from None
    parts = path.name.split(".")
    fmt = args.format
    data: Any = None
    if path.suffix.lower() == ".json" and fmt in (None, "json"):
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise BadRequest(f"{path} is not valid JSON") from None
    if fmt is None:
        if path.suffix.lower() == ".po":
            fmt = "po"
        elif path.suffix.lower() == ".json":
            own = isinstance(data, dict) and "keys" in data and "locales" in data
            fmt = "json" if own else "i18next"
        else:
            raise BadRequest(f"cannot tell the format of {path}; give --format")
    project = args.project
    if project is None and fmt == "json" and isinstance(data, dict) and isinstance(data.get("name"), str):
        project = data["name"]
    if project is None:
        project = parts[0]
    if not project:
        raise BadRequest(f"cannot tell the project of {path}; give --project")
    locale = args.locale
    if locale is None and fmt == "i18next":
        # name.de.json
        if len(parts) < 3:
            raise BadRequest(f"cannot tell the locale of {path} (name it <project>.<locale>.json); give --locale")
        locale = parts[-2]
    return Plan(path, raw, fmt, project, locale)


def cmd_import(args: argparse.Namespace) -> int:
    plans = [_plan(Path(f), args) for f in args.files]
    quire = _quire(args)

    async def run() -> list[str]:
        projects = await quire.l10n.import_files([(p.project, p.fmt, p.raw, p.locale) for p in plans], ADMIN)
        return [f"Imported {plan.path} ({plan.fmt}) into project {project['name']}: "
                f"{len(project['keys'])} keys, locales {', '.join(project['locales'])}"
                for plan, project in zip(plans, projects, strict=True)]

    try:
        for line in asyncio.run(run()):
            print(line)
    finally:
        quire.close()
    return 0


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser,
               open_services: Callable[[argparse.Namespace], Any]) -> None:
    l10n = sub.add_parser("l10n", help="export and import translation projects",
                          description="Export and import translation projects (json, po, i18next).")
    actions = l10n.add_subparsers(dest="l10n_cmd", required=True, metavar="ACTION")

    export = actions.add_parser(
        "export", parents=[common], help="write a project, or one locale of it, as a file",
        description="Export a project. json: the whole project. po, i18next: one locale with "
        "--locale (to stdout or --out FILE), or every locale with --out DIR "
        "(one file <name>.<locale>.po|json each).",
    )
    export.add_argument("name", help="project name")
    export.add_argument("--format", choices=FORMATS, default="json", help="file format (default json)")
    export.add_argument("--locale", default=None, help="locale to export (po, i18next)")
    export.add_argument("--out", default=None, help="file or directory to write (default stdout)")
    export.set_defaults(func=cmd_export, open_services=open_services)

    imp = actions.add_parser(
        "import", parents=[common], help="load translation files into projects",
        description="Import files; all or nothing. The format comes from the extension "
        "(.po; .json with keys and locales is a project, any other .json is i18next). "
        "The project is --project, else a json project's name, else the file name up to "
        "its first dot. The locale is --locale, else the PO header Language, else "
        "the file name's second-to-last part (site.de.json).",
    )
    imp.add_argument("files", nargs="+", metavar="FILE", help="files to import")
    imp.add_argument("--project", default=None, help="project name")
    imp.add_argument("--format", choices=FORMATS, default=None, help="file format (default: guessed)")
    imp.add_argument("--locale", default=None, help="locale of po or i18next files")
    imp.set_defaults(func=cmd_import, open_services=open_services)
