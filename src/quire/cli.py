"""The `quire` command: serve, init, demo, keys, spaces, users, models, export, import, migrate."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import secrets
import shutil
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from quire.config import ConfigError, Settings, load_settings, log_deprecations
from quire.errors import NotFound
from quire.processes import lower_priority


def _settings(args: argparse.Namespace) -> Settings:
    """The settings of the site a command works on: the main site's, or
    with `--space NAME` that space's (its own database and files)."""
    settings = load_settings(args.data, getattr(args, "config", None))
    space = getattr(args, "space", None)
    if space:
        from quire.spaces.service import space_settings

        _existing_space(settings, space)
        return space_settings(settings, space)
    return settings


def _existing_space(settings: Settings, name: str) -> None:
    """Nothing, or NotFound (status 1) when the site has no space `name`."""
    from quire.app import Quire
    from quire.spaces.service import SpaceService

    main = Quire(settings)
    try:
        main.get(SpaceService).get(name)
    finally:
        main.close()


def _quire(args: argparse.Namespace) -> Any:
    from quire.app import MODULES, Quire

    settings = _settings(args)
    # a space has no spaces of its own
    modules = [m for m in MODULES if m.name != "spaces"] if getattr(args, "space", None) else None
    quire = Quire(settings, modules=modules)
    # A command may wait for the write lock longer than an API request:
    # nobody else waits behind it.
    quire.store.lock_timeout = quire.store.blocking_timeout
    return quire


RESPAWN_SECONDS = 1.0  # pause before a dead worker is started again
# On SIGTERM a worker ends its event streams (app.hear_the_stop) and
# finishes what it is answering; one that has not stopped after this long (a
# long request, a worker caught starting up) is killed, so that stopping the
# server never hangs. Every acknowledged write was committed before its
# answer, so the kill loses none.
STOP_SECONDS = 10


def cmd_serve(args: argparse.Namespace) -> int:
    overrides: dict[str, dict[str, Any]] = {"server": {}}
    for key in ("host", "port", "workers", "access_log"):
        if getattr(args, key, None) is not None:
            overrides["server"][key] = getattr(args, key)
    if args.quiet:
        overrides["server"]["quiet"] = True
    return _serve(args, overrides)


def _serve(args: argparse.Namespace, overrides: dict[str, dict[str, Any]],
           when_up: Callable[[str], None] | None = None) -> int:
    """Serve until stopped; `when_up(url)` runs once the server answers."""
    settings = load_settings(args.data, args.config, overrides=overrides)
    log_deprecations(settings)  # here once; the workers read the same settings again
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    _quire(args).close()  # create the database before the workers race to
    server = settings.server
    os.environ["QUIRE_DATA"] = str(settings.data_dir.resolve())
    os.environ["QUIRE_CONFIG"] = str(Path(args.config).resolve()) if args.config else ""
    for key, value in overrides["server"].items():
        os.environ[f"QUIRE_SERVER_{key.upper()}"] = str(value).lower() if isinstance(value, bool) else str(value)
    if _address_taken(server.host, server.port):
        return 1
    serving = f"Quire serving {settings.data_dir} on http://{server.host}:{server.port}"
    if server.log_format == "json":
        from quire.requestid import configure_logging

        configure_logging(True)
        logging.getLogger("quire").info(serving)
    else:
        print(serving, flush=True)
    if when_up is not None:
        url = _local_url(server.host, server.port)
        threading.Thread(target=_wait_then, args=(url, when_up), daemon=True).start()
    granian_server("quire.served:app_from_env", server.host, server.port, server.workers, server.quiet,
                   json_logs=server.log_format == "json").serve()
    return 0


def _local_url(host: str, port: int) -> str:
    # a server on a wildcard address listens on this machine's loopback too
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}"


def _wait_then(url: str, then: Callable[[str], None]) -> None:
    """Call `then(url)` once the server answers its login page (the workers
    have started and printed their own lines); nothing if it never does."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/auth/login", timeout=5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        return
    then(url)


def _address_taken(host: str, port: int) -> bool:
    """Whether `host:port` cannot be served (said on stderr)."""
    why = _why_unservable(host, port)
    if why:
        print(f"error: cannot serve on {host}:{port}: {why}", file=sys.stderr)
    return why is not None


def _why_unservable(host: str, port: int) -> str | None:
    """Why `host:port` cannot be served, or None. The server binds with
    SO_REUSEPORT (its workers share the socket), so a second server on a
    port already served would start without a word and the kernel would
    deal the requests out between the two: a plain bind finds it first."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"unknown host ({exc.strerror}); check --host or [server] host"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port left in TIME_WAIT is free
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return ("the port is in use (another Quire or another program serves there); "
                        "stop it or choose another port with --port or [server] port")
            return f"{exc.strerror or exc}; check --host, --port or [server]"
    return None


# `[server] log_format = "json"`: the server's own lines as JSON too (granian's
# logging config names these two formatters)
JSON_LOGGING = {"formatters": {name: {"()": "quire.requestid.JsonFormatter"} for name in ("generic", "access")}}


def granian_server(target: str, host: str, port: int, workers: int, quiet: bool, json_logs: bool = False) -> Any:
    """The server `quire serve` runs: granian's ASGI interface, with the app
    made in each worker by the factory `target` ("module:function"). The
    content benchmark serves its ceiling app with it too, so both run with
    the very same options."""
    from granian import Granian

    return Granian(
        target,
        address=host,
        port=port,
        interface="asgi",  # type: ignore[arg-type]
        workers=workers,
        factory=True,
        loop=_event_loop(),  # type: ignore[arg-type]
        log_enabled=not quiet,
        log_dictconfig=JSON_LOGGING if json_logs else None,
        log_access=False,
        # A worker killed by the kernel (out of memory) or by a crash in a
        # native library is started again; the others keep serving meanwhile.
        respawn_failed_workers=True,
        respawn_interval=RESPAWN_SECONDS,
        workers_kill_timeout=STOP_SECONDS,
    )


def _event_loop() -> str:
    """uvloop where it is installed (a dependency on every platform it
    supports), else asyncio's own loop."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def cmd_init(args: argparse.Namespace) -> int:
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    toml = data / "quire.toml"
    if not toml.exists():
        toml.write_text(
            "# Quire settings; see docs/configuration.md. Environment variables\n"
            "# QUIRE_<SECTION>_<KEY> override this file.\n\n"
            "[server]\nhost = \"127.0.0.1\"\nport = 8080\n\n[api]\n# max_body_bytes = 10485760\n",
            encoding="utf-8",
        )
    quire = _quire(args)
    quire.close()
    print(f"Initialised {data}")
    return 0


DEMO_LOGIN = "demo-login.txt"  # in the data directory: the last demo run's login, for `quire demo --login`


def cmd_demo(args: argparse.Namespace) -> int:
    from quire.demo import DEMO_USER, contact_token, install_demo, rotate_admin_password

    saved = Path(args.data) / DEMO_LOGIN
    if args.login:
        if not saved.is_file():
            print(f"No demo login in {args.data}: run `quire demo --data {args.data}` first", file=sys.stderr)
            return 1
        print(saved.read_text(encoding="utf-8"), end="")
        return 0
    quire = _quire(args)
    try:
        created, key = asyncio.run(install_demo(quire))
        token = contact_token(quire)
        password = rotate_admin_password(quire)
        host, port = quire.settings.server.host, quire.settings.server.port
    finally:
        quire.close()
    # the address it is served at: --host and --port win over the settings
    host = host if getattr(args, "host", None) is None else args.host
    port = port if getattr(args, "port", None) is None else args.port
    url = _local_url(host, port)
    if args.serve and _address_taken(host, port):
        return 1
    login = []
    if token:
        login.append(f"Contact form token: {token}   (POST {url}/api/inbox/submit/{token}, no key needed)")
    login.append(f"Admin interface: open {url}/ and log in as user {DEMO_USER}, password {password}   "
                 "(new on every run)")
    # the key stays the last line: KEY=$(quire demo | tail -1)
    login += ["Admin API key (new on every run; the previous demo key was revoked):", key]
    _write_private(saved, "\n".join(login) + "\n")
    print("Demo data created." if created else "Demo data already present.", flush=True)
    if not args.serve:
        print(f"Serve it with: quire serve --data {args.data}   (then: curl {url}/api/content/items/posts)")
        print("\n".join(login))
        return 0

    def show_login(url: str) -> None:
        # last, once the server's own start-up lines are out, so that the
        # password and the key are what the terminal ends with
        again = "make login" if args.make else f"quire demo --login --data {args.data}"
        print("\n".join(["", f"The demo is ready at {url}/", *login, "",
                         f"These again: {again}. Stop the server with Ctrl+C. Requests are not logged "
                         "(quire serve --access-log logs them)."]), flush=True)

    overrides: dict[str, dict[str, Any]] = {"server": {"access_log": args.access_log or False}}
    for name in ("host", "port"):
        if getattr(args, name) is not None:
            overrides["server"][name] = getattr(args, name)
    return _serve(args, overrides, show_login)


def _write_private(path: Path, text: str) -> None:
    """`text` in a file only its owner may read (it holds a password)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when the file was there with other modes
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def cmd_keys(args: argparse.Namespace) -> int:
    quire = _quire(args)
    try:
        if args.keys_cmd == "create":
            created = quire.auth.create_key(args.name, args.role)
            print(f"Created key {created['_id']} ({created['name']}, role {created['role']}). Shown once:")
            print(created["key"])
        elif args.keys_cmd == "list":
            for key in quire.auth.list_keys():
                print(f"{key['_id']}  {key['role']:<12} …{key['hint']}  {key['name']}")
        else:
            quire.auth.delete_key(args.id)
            print(f"Deleted key {args.id}")
    finally:
        quire.close()
    return 0


def cmd_spaces(args: argparse.Namespace) -> int:
    from quire.auth.service import SYSTEM
    from quire.spaces.service import SpaceService

    if args.spaces_cmd in ("fork", "diff", "merge"):
        return _forks(args)
    quire = _quire(args)
    try:
        spaces = quire.get(SpaceService)
        if args.spaces_cmd == "list":
            for space in spaces.all():
                print(f"{space['name']:<20} {space['api']:<28} {space['label']}")
            for alias in spaces.list_aliases():
                print(f"{alias['name']:<20} {alias['api']:<28} alias of {alias['space']}")
        elif args.spaces_cmd == "alias":
            pointed = asyncio.run(spaces.point(args.name, {"space": args.target}, SYSTEM))
            was = f" (was {pointed['previous']})" if pointed["previous"] else ""
            print(f"{pointed['api']}/... now serves space {pointed['space']}{was}")
        elif args.spaces_cmd == "unalias":
            asyncio.run(spaces.unalias(args.name))
            print(f"Removed alias {args.name}")
        elif args.spaces_cmd == "create":
            made = asyncio.run(spaces.create({"name": args.name, "label": args.label or args.name}, SYSTEM))
            print(f"Created space {made['name']}: its API is {made['api']}/...; "
                  f"a key for it: quire keys create --space {made['name']} --name ... --role admin")
        else:
            if not args.yes:
                print(f"error: removing space {args.name} deletes its content, files and keys for good; "
                      "say so with --yes", file=sys.stderr)
                return 1
            asyncio.run(spaces.remove(args.name))
            print(f"Removed space {args.name}")
    finally:
        quire.close()
    return 0


def _forks(args: argparse.Namespace) -> int:
    from quire import forks

    settings = _settings(args)
    lower_priority(settings.server.batch_niceness, whole_process=True)  # bulk work: a server beside it answers first
    try:
        if args.spaces_cmd == "fork":
            started = time.monotonic()
            made = forks.fork(settings, args.source, args.name, args.label,
                              lambda step: print(f"  {step}", file=sys.stderr, flush=True))
            print(f"Forked space {args.source} into {made['name']} in {time.monotonic() - started:.1f} s: "
                  f"its API is {made['api']}/... (quire spaces diff {made['name']} compares them)")
            return 0
        if args.spaces_cmd == "merge":
            return _merge(settings, args)
        origin, models = forks.diff(settings, args.name)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(orjson.dumps({"space": args.name, "origin": origin, "models": [m.as_json() for m in models]},
                           option=orjson.OPT_INDENT_2).decode())
        return 0
    if not models:
        print(f"{args.name} and {origin} hold the same items")
        return 0
    print(f"{args.name} against {origin}, item by item since the fork:")
    for m in models:
        counts = [(len(m.added), "added"), (len(m.changed), "changed"), (len(m.removed), "removed"),
                  (len(m.origin_added), f"added in {origin}"), (len(m.origin_changed), f"changed in {origin}"),
                  (len(m.origin_removed), f"removed in {origin}"), (len(m.conflicts), "changed on both sides")]
        print(f"  {m.model}: " + ", ".join(f"{n} {what}" for n, what in counts if n))
    print(f"Models and settings: quire schema snapshot --space {origin} > origin.json; "
          f"quire schema diff --space {args.name} origin.json")
    return 0


def _merge(settings: Any, args: argparse.Namespace) -> int:
    """Show a fork's merge plan, or apply the one named (`--plan`), or show
    and apply it at once (`--yes`)."""
    from quire import forks

    if args.plan:
        started = time.monotonic()
        done = forks.merge(settings, args.name, args.plan, args.take, "the command line",
                           lambda step: print(f"  {step}", file=sys.stderr, flush=True))
        print(f"Merged {done.writes} changes of {args.name} into {done.origin} in {time.monotonic() - started:.1f} s")
        return 0
    plan = forks.merge_plan(settings, args.name, args.take)
    if args.json:
        print(orjson.dumps(plan.as_json(), option=orjson.OPT_INDENT_2).decode())
        return 0
    print(f"Merging {args.name} into {plan.origin} would:")
    for m in plan.models:
        parts = [(len(m["add"]), "add"), (len(m["change"]), "change"), (len(m["remove"]), "remove")]
        line = ", ".join(f"{what} {n}" for n, what in parts if n) or "change nothing"
        left = f"; {len(m['conflicts'])} changed on both sides stay as {plan.origin} has them" if m["conflicts"] else ""
        print(f"  {m['model']}: {line}{left}")
    if plan.assets:
        print(f"  and copy {len(plan.assets)} assets the merged items use")
    if plan.missing_models:
        print(f"error: {plan.origin} has no model {', '.join(plan.missing_models)}: carry the schema over first "
              f"(quire schema snapshot --space {args.name} > fork.json; quire schema apply --space {plan.origin} "
              "fork.json)", file=sys.stderr)
        return 1
    if not plan.writes:
        print("Nothing to merge.")
        return 0
    if not args.yes:
        print(f"To apply this plan (and only this one): quire spaces merge {args.name} --take {args.take} "
              f"--plan {plan.plan}")
        return 0
    done = forks.merge(settings, args.name, plan.plan, args.take, "the command line",
                       lambda step: print(f"  {step}", file=sys.stderr, flush=True))
    print(f"Merged {done.writes} changes of {args.name} into {done.origin}")
    return 0


def _password_from_stdin() -> tuple[str, bool]:
    """(password, generated): the first line of stdin, else a new random one."""
    password = ""
    if sys.stdin is not None and not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\n")
    if password:
        return password, False
    return secrets.token_urlsafe(12), True


def cmd_users(args: argparse.Namespace) -> int:
    quire = _quire(args)
    try:
        if args.users_cmd == "list":
            for user in quire.users.list_all():
                via = " (sso)" if user.get("_sso") else ""
                state = "" if user.get("active", True) else " inactive"
                print(f"{user['_id']}  {user['role']:<12} {user['user']} <{user['email']}>{via}{state}")
            return 0
        password, generated = _password_from_stdin()
        if args.users_cmd == "passwd":
            found = quire.users.by_name(args.user)
            if found is None:
                print(f"User {args.user} not found", file=sys.stderr)
                return 1
            quire.users.update(found["_id"], {"password": password})
            ended = quire.sessions.end_user(found["_id"])
            print(f"New password set for {args.user}; {ended} session(s) ended")
        else:
            user = quire.users.create({"user": args.user, "email": args.email, "role": args.role,
                                       "password": password, "name": args.name or args.user})
            print(f"Created user {user['user']} ({user['email']}, role {user['role']})")
    finally:
        quire.close()
    if generated:
        print(f"Password: {password}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    quire = _quire(args)
    try:
        if args.action == "indexes":
            return _print_indexes(quire, args.model)
        if args.model:
            print("quire models: a model name goes with `indexes`", file=sys.stderr)
            return 2
        for model in quire.models.all():
            print(f"{model.name:<20} {model.type:<10} {len(model.fields)} fields")
    finally:
        quire.close()
    return 0


def _print_indexes(quire: Any, only: str | None) -> int:
    """Every index of every model (or of one): origin, fields, size, use."""
    names = [only] if only else [m.name for m in quire.models.all()]
    try:
        found = [(name, index) for name in names for index in quire.models.indexes(name)]
    except NotFound as exc:
        print(f"quire models indexes: {exc.message}", file=sys.stderr)
        return 1
    print(f"{'model':<20} {'origin':<10} {'size':>10}  {'last used':<16}  fields")
    for name, index in found:
        size = "?" if index["bytes"] is None else _size(index["bytes"])
        used = time.strftime("%Y-%m-%d %H:%M", time.gmtime(index["used"])) if "used" in index else "-"
        print(f"{name:<20} {index['origin']:<10} {size:>10}  {used:<16}  {', '.join(index['fields'])}")
    return 0


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = n / 1024
    for unit in ("KB", "MB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def cmd_types(args: argparse.Namespace) -> int:
    """The models' types for a client (TypeScript), every model's."""
    from quire.auth.service import SYSTEM
    from quire.content.schemas import components
    from quire.content.typescript import typescript

    quire = _quire(args)
    try:
        models = quire.models.all()
        text = typescript(components(models, SYSTEM), [m.name for m in models])
    finally:
        quire.close()
    if args.out in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"Wrote the types of {len(models)} models to {args.out}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from quire.bundle import Selection
    from quire.http import parse_json_text
    from quire.store.query import parse_filter

    if args.filter and not args.model:
        return _refuse("--filter goes with --model: the filter of that model's items")
    only = None
    if args.model:
        spec = parse_json_text(args.filter, "filter") if args.filter else None
        if spec is not None and not isinstance(spec, dict):
            return _refuse("--filter must be a JSON object (a MongoDB filter)")
        if spec is not None:
            parse_filter(spec)  # a bad filter is refused before anything is written
        only = Selection(args.model, spec)
    problem = _no_site(args) or _no_folder(args.out)
    if problem:
        return _refuse(problem)
    quire = _quire(args)
    try:
        if args.out in (None, "-"):
            out = sys.stdout.buffer
            _export_to(quire, out, only, args.with_files)
        else:
            target = Path(args.out)
            partial = target.with_name(f".{target.name}.part")
            with open(partial, "wb") as out:
                _export_to(quire, out, only, args.with_files)
            partial.replace(target)
    finally:
        quire.close()
    return 0


def _no_site(args: argparse.Namespace) -> str | None:
    """Why a command that reads a site cannot (a mistyped --data), or None."""
    settings = _settings(args)
    if settings.store.url or settings.db_path.is_file():
        return None
    return f"{settings.data_dir} holds no site (no {settings.db_path.name}): check --data"


def _no_folder(out: str | None) -> str | None:
    if out in (None, "-") or Path(out).parent.is_dir():
        return None
    return f"{Path(out).parent} is not a folder: the file {out} cannot be written there"


def _export_to(quire: Any, out: Any, only: Any, with_files: bool) -> None:
    from quire.bundle import export_bundle, write_archive

    if with_files:
        write_archive(quire, out, only)
    else:
        for chunk in export_bundle(quire, only=only):
            out.write(chunk)
        out.write(b"\n")
    out.flush()


def cmd_import(args: argparse.Namespace) -> int:
    # bulk work: a server beside it answers first
    lower_priority(_settings(args).server.batch_niceness, whole_process=True)
    if args.from_cockpit:
        from quire.cockpit.cli import import_cockpit

        if args.file:
            print("error: give a bundle file or --from-cockpit, not both", file=sys.stderr)
            return 2
        return import_cockpit(args, _quire)
    if not args.file:
        print("error: give a bundle file (or - for stdin), or --from-cockpit FOLDER", file=sys.stderr)
        return 2
    if args.dry_run or args.report or args.mongo_export or args.verify or args.key:
        print("error: --dry-run, --report, --mongo-export, --verify and --key go with --from-cockpit",
              file=sys.stderr)
        return 2
    if args.file != "-" and _is_archive(args.file):
        return _import_archive(args)

    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        print(f"error: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 1
    if args.file == "-" and raw[257:262] == b"ustar":  # an archive of `quire export --with-files` on stdin
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".tar") as held:
            held.write(raw)
            held.flush()
            args.file = held.name
            return _import_archive(args)
    try:
        bundle = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        print(f"error: {args.file} is not valid JSON: {exc}", file=sys.stderr)
        return 1
    return _run_import(args, bundle, None, lambda: None)


def _is_archive(name: str) -> bool:
    import tarfile

    try:
        return tarfile.is_tarfile(name)
    except OSError:
        return False


def _import_archive(args: argparse.Namespace) -> int:
    """A bundle with files (`quire export --with-files`)."""
    from quire.bundle import read_archive
    from quire.errors import ApiError

    try:
        bundle, files, close = read_archive(args.file)
    except ApiError as exc:
        print(f"error: {args.file}: {exc.message}", file=sys.stderr)
        return 1
    return _run_import(args, bundle, files, close)


def _run_import(args: argparse.Namespace, bundle: Any, files: Any, close: Any) -> int:
    """Store a bundle (and the files of an archive), saying how far it got
    when it stops."""
    from quire.bundle import Progress, import_bundle
    from quire.errors import ApiError

    quire = _quire(args)
    progress = Progress()
    try:
        counts = asyncio.run(import_bundle(quire, bundle, progress=progress, files=files))
        items, assets = quire.asset_refs.missing() if files is None else (0, 0)
    except ApiError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        _stopped(progress, "the import stopped")
        return 1
    except KeyboardInterrupt:
        _stopped(progress, "interrupted")
        return 130
    finally:
        close()
        quire.close()
    print("Imported " + ", ".join(f"{n} {what}" for what, n in counts.items()))
    if items:
        print(f"note: {items} items refer to {assets} assets this site does not have; a bundle brings assets "
              "with their files when written with quire export --with-files", file=sys.stderr)
    return 0


def _stopped(progress: Any, why: str) -> None:
    """Items are committed in batches: say how many are in, when some are."""
    if progress.stored:
        print(f"{why}: {progress.stored} of {progress.items} items are stored; "
              "run the same import again to complete it", file=sys.stderr)


def cmd_search(args: argparse.Namespace) -> int:
    from quire.auth.service import Identity

    quire = _quire(args)
    try:
        started = time.perf_counter()
        index = asyncio.run(quire.search.rebuild(args.name, Identity("admin", key_id="cli", kind="system")))
        took = time.perf_counter() - started
    finally:
        quire.close()
    print(f"Rebuilt index {index['name']}: {index['documents']} documents in {took:.1f} s")
    return 0


def cmd_previews(args: argparse.Namespace) -> int:
    from quire.auth.service import SYSTEM

    quire = _quire(args)
    try:
        asyncio.run(quire.content.end_previews(SYSTEM))
    finally:
        quire.close()
    print("Every preview link given out so far has stopped working (on every instance).")
    return 0


def _refuse(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def cmd_migrate(args: argparse.Namespace) -> int:
    """Copy the data dir's SQLite database to PostgreSQL, or (`--verify`)
    compare the two; see docs/deployment.md."""
    import psycopg

    from quire import migrate
    from quire.errors import ApiError
    from quire.store import PostgresStore, SqliteStore

    url = args.to
    if not migrate.is_postgres_url(url):
        return _refuse("--to must be a postgresql:// address (postgresql://user:password@host:port/database)")
    if args.batch < 1:
        return _refuse("--batch must be at least 1")
    settings = load_settings(args.data, args.config, overrides={"store": {"url": url}})
    if not settings.db_path.is_file():
        return _refuse(f"{args.data} holds no database ({settings.db_path.name}): nothing to migrate")
    if args.files and not settings.assets.storage:
        return _refuse("--files copies the uploads into the bucket of [assets] storage, and the settings "
                       "name none (without one, the files stay in the data folder)")
    shown = migrate.redacted(url)
    try:
        target = PostgresStore(url, lock_timeout=60.0)
    except (ApiError, psycopg.Error) as exc:
        return _refuse(f"cannot reach {shown}: {_reason(exc, url)}")
    source = SqliteStore(settings.db_path)
    started = time.perf_counter()
    try:
        if args.verify:
            checks = migrate.verify(source, target)
            if args.files:
                checks.append(_with_files(settings, migrate.files_check))
            print(migrate.verify_table(checks))
            differ = [c.name for c in checks if not c.same]
            if differ:
                print(f"{len(differ)} of {len(checks)} collections differ between {settings.db_path} and {shown}")
                return 1
            same_text = all(c.same_text for c in checks)
            print(f"All {len(checks)} collections of {settings.db_path} match {shown} (documents compared as "
                  f"parsed JSON; {'the stored text is byte for byte the same too' if same_text else 'the stored text differs where marked'})")
            return 0
        foreign = migrate.foreign_documents(target)
        if foreign:
            return _refuse(f"{shown} already holds {foreign} documents that `quire migrate` did not write "
                           "(another site?); migrate into an empty database or schema")
        gone_before = migrate.search_index_names(target)
        totals = migrate.copy_site(source, target, args.batch)
        if args.files:
            _with_files(settings, migrate.copy_files)
    except (ApiError, psycopg.Error) as exc:
        print(f"error: {_reason(exc, url)}; what was copied stays, run the same migration again to complete it",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: what was copied stays, run the same migration again to complete it", file=sys.stderr)
        return 130
    finally:
        source.close()
        target.close()
    return _finish_migration(settings, totals, gone_before, shown, started, args.files)


def _with_files(settings: Settings, work: Any) -> Any:
    """`work(data folder, bucket)`, the bucket's client closed after."""
    from quire.files import LocalFiles, open_files

    bucket = open_files(settings.assets, settings.data_dir)
    try:
        return work(LocalFiles(settings.data_dir), bucket)
    finally:
        bucket.close()


def _finish_migration(settings: Settings, totals: Any, gone_before: list[str], shown: str, started: float,
                      files: bool) -> int:
    """Build the services on the target (each module makes its indexes),
    then the content models' indexes and the search indexes."""
    import psycopg

    from quire import migrate
    from quire.app import Quire
    from quire.errors import ApiError

    try:
        quire = Quire(settings)
        try:
            finished = migrate.finish(quire, gone_before)
        finally:
            quire.close()
    except (ApiError, psycopg.Error) as exc:
        print(f"error: {_reason(exc, settings.store.url)}; the documents are copied, run the same migration "
              "again to build the indexes", file=sys.stderr)
        return 1
    searched = ", ".join(f"{name} ({n} items)" for name, n in finished.searched.items()) or "none"
    removed = f", {totals.removed} removed from the target" if totals.removed else ""
    dropped = f", {len(totals.dropped)} collections dropped" if totals.dropped else ""
    print(f"Migrated {totals.documents} documents in {len(totals.collections)} collections to {shown}"
          f"{removed}{dropped}; {totals.meta} metadata keys; indexes of {finished.models} content models; "
          f"search indexes rebuilt: {searched}; in {migrate.elapsed(started)}")
    if files:
        print(f"Uploads are in {settings.assets.storage} (thumbnails are made again there on demand): "
              f"serve the site with [store] url = \"{shown}\" and [assets] storage = \"{settings.assets.storage}\"")
    else:
        print(f"Files (uploads, thumbnails) stay in {settings.data_dir}: serve the site from it, "
              f"with [store] url = \"{shown}\"")
    return 0


def _reason(exc: BaseException, url: str) -> str:
    """What went wrong, in one line without the password: the driver's own
    words too where the store's message stands in for them."""
    import psycopg

    from quire import migrate
    from quire.errors import ApiError

    text = exc.message if isinstance(exc, ApiError) else str(exc)
    cause = exc.__context__
    if isinstance(exc, ApiError) and isinstance(cause, psycopg.Error) and str(cause).strip():
        text = f"{text} ({str(cause).strip().splitlines()[0]})"
    return migrate.scrubbed(text.strip().splitlines()[0] if text.strip() else type(exc).__name__, url)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quire", description="Quire: a headless CMS with a JSON REST API."
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data", default="./data", help="data directory (default ./data)")
    common.add_argument("--config", default=None, help="settings file (default <data>/quire.toml)")
    common.add_argument("--space", metavar="NAME", default=None,
                        help="work on this space of the site (quire spaces list), not on the main site")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", parents=[common], help="run the HTTP server (granian)",
                           description="Serve the API. Creates the data dir on first start.")
    serve.add_argument("--host", default=None, help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8080)")
    serve.add_argument("--workers", type=int, default=None, help="worker processes (default 1)")
    serve.add_argument("--quiet", action="store_true", help="no log output at all")
    serve.add_argument("--access-log", action=argparse.BooleanOptionalAction, default=None,
                       help="a line per request (default: [server] access_log, on)")
    serve.set_defaults(func=cmd_serve)

    sub.add_parser("init", parents=[common], help="create a data dir with a quire.toml",
                   description="Create the data directory, its database and a commented quire.toml."
                   ).set_defaults(func=cmd_init)
    demo = sub.add_parser("demo", parents=[common], help="load the demo blog and print an admin key",
                          description="Load a small demo blog (once) and print a fresh admin API key.")
    demo.add_argument("--serve", action="store_true",
                      help="then serve it, printing the login last once the server answers (what `make run` does)")
    demo.add_argument("--host", default=None, help="with --serve: address to bind")
    demo.add_argument("--port", type=int, default=None, help="with --serve: port")
    demo.add_argument("--access-log", action="store_true", help="with --serve: a line per request")
    demo.add_argument("--login", action="store_true", help="print the last run's login again (changes nothing)")
    demo.add_argument("--make", action="store_true", help=argparse.SUPPRESS)  # run by `make run`: name `make login`
    demo.set_defaults(func=cmd_demo)

    keys = sub.add_parser("keys", help="manage API keys", description="Create, list and delete API keys.")
    keys_sub = keys.add_subparsers(dest="keys_cmd", required=True, metavar="ACTION")
    create = keys_sub.add_parser("create", parents=[common], help="create a key; it is printed once",
                                 description="Create an API key. The key is printed alone on the last line.")
    create.add_argument("--name", required=True, help="a label for the key")
    create.add_argument("--role", required=True, help="role of the key (admin, public or a custom role)")
    keys_sub.add_parser("list", parents=[common], help="list keys (never the keys themselves)")
    delete = keys_sub.add_parser("delete", parents=[common], help="revoke a key")
    delete.add_argument("id", help="key id, from `quire keys list`")
    keys.set_defaults(func=cmd_keys)

    spaces = sub.add_parser("spaces", help="manage spaces (several sites in one Quire)",
                            description="Create, list and remove spaces: sites with their own content, files, "
                                        "roles and keys, served at /NAME/api/... (docs/spaces.md).")
    spaces_sub = spaces.add_subparsers(dest="spaces_cmd", required=True, metavar="ACTION")
    screate = spaces_sub.add_parser("create", parents=[common], help="create a space")
    screate.add_argument("name", help="2 to 40 lowercase letters, digits and inner hyphens")
    screate.add_argument("--label", help="a name for people (default: the name)")
    spaces_sub.add_parser("list", parents=[common], help="list the spaces")
    sremove = spaces_sub.add_parser("remove", parents=[common], help="remove a space and everything in it")
    sremove.add_argument("name")
    sremove.add_argument("--yes", action="store_true", help="yes, delete its content, files and keys")
    sfork = spaces_sub.add_parser("fork", parents=[common], help="make a space a copy of another (an environment)")
    sfork.add_argument("source", help="the space copied, as it is now")
    sfork.add_argument("name", help="the new space")
    sfork.add_argument("--label", help="a name for people (default: the name)")
    sdiff = spaces_sub.add_parser("diff", parents=[common], help="a forked space against its origin, item by item")
    sdiff.add_argument("name", help="the forked space")
    sdiff.add_argument("--json", action="store_true", help="the ids, as JSON")
    smerge = spaces_sub.add_parser("merge", parents=[common], help="carry a fork's changes into its origin, "
                                   "by a plan shown first")
    smerge.add_argument("name", help="the forked space")
    smerge.add_argument("--take", choices=("origin", "fork"), default="origin",
                        help="whose side of an item changed on both sides is kept (default: the origin's)")
    smerge.add_argument("--plan", help="apply the plan of this name (shown by the command without it), "
                        "refused if anything changed since")
    smerge.add_argument("--yes", action="store_true", help="show the plan and apply it at once")
    smerge.add_argument("--json", action="store_true", help="the plan, as JSON")
    salias = spaces_sub.add_parser("alias", parents=[common], help="point an alias at a space (or switch it)")
    salias.add_argument("name", help="the alias, served at /NAME/api/...")
    salias.add_argument("target", metavar="space", help="the space it serves from now on")
    sunalias = spaces_sub.add_parser("unalias", parents=[common], help="remove an alias")
    sunalias.add_argument("name")
    spaces.set_defaults(func=cmd_spaces)

    users = sub.add_parser("users", help="manage admin users", description="Manage admin users.")
    users_sub = users.add_subparsers(dest="users_cmd", required=True, metavar="ACTION")
    ucreate = users_sub.add_parser(
        "create", parents=[common], help="create a user",
        description="Create a user. The password is read from stdin; without one a password is generated and printed.",
    )
    ucreate.add_argument("--user", required=True, help="login name")
    ucreate.add_argument("--email", required=True, help="e-mail address")
    ucreate.add_argument("--role", required=True, help="role")
    ucreate.add_argument("--name", default=None, help="display name")
    upasswd = users_sub.add_parser(
        "passwd", parents=[common], help="set a user's password",
        description="Set a new password (read from stdin, or generated and printed); ends the user's sessions.",
    )
    upasswd.add_argument("--user", required=True, help="login name")
    users_sub.add_parser("list", parents=[common], help="list users")
    users.set_defaults(func=cmd_users)

    models = sub.add_parser("models", parents=[common], help="list content models, or their indexes",
                            description="List content models; `quire models indexes [MODEL]` lists every "
                                        "index of their items: built-in, declared or automatic, with size.")
    models.add_argument("action", nargs="?", choices=["list", "indexes"], default="list", help="what to list")
    models.add_argument("model", nargs="?", default=None, help="one model (with indexes)")
    models.set_defaults(func=cmd_models)
    types = sub.add_parser("types", parents=[common], help="write the content models' types for a client",
                           description="The models' types, as the OpenAPI document's schemas: quire types "
                                       "--lang typescript --out src/quire-models.ts")
    types.add_argument("--lang", choices=["typescript"], default="typescript", help="the language (typescript)")
    types.add_argument("--out", help="the file to write (standard output without it)")
    types.set_defaults(func=cmd_types)
    exp = sub.add_parser("export", parents=[common], help="write models, locales, roles and items as JSON to stdout",
                         description="Export a bundle: quire export > bundle.json. With --with-files, a tar "
                                     "archive of the bundle and its assets' files; with --model, one model's "
                                     "items (--filter: those matching a MongoDB filter).")
    exp.add_argument("--model", help="only this model's items (with its definition and the locales)")
    exp.add_argument("--filter", metavar="JSON", help="with --model: only the items matching this filter")
    exp.add_argument("--with-files", action="store_true",
                     help="write a tar archive: the bundle with the assets (records and files) it needs")
    exp.add_argument("--out", metavar="FILE", help="write here (replaced once whole) instead of standard output")
    exp.set_defaults(func=cmd_export)
    imp = sub.add_parser("import", parents=[common], help="load a bundle written by export",
                         description="Import a bundle (models, locales, roles, pages, items, ...). "
                                     "The whole bundle is checked first: nothing is stored if any part "
                                     "is bad. Items are then committed in batches, so the server keeps "
                                     "answering writes; a hook refusing an item stops the import there "
                                     "(the error says how many items are stored). Items are matched by "
                                     "id, so running the same import again is safe and finishes it.")
    imp.add_argument("file", nargs="?", help="bundle file, or - for stdin")
    imp.add_argument("--from-cockpit", metavar="FOLDER",
                     help="take in a Cockpit 2 site from its installation (or storage) folder instead of a bundle")
    imp.add_argument("--mongo-export", metavar="DIR",
                     help="with --from-cockpit, for a site on MongoDB: the folder of its collections as "
                          "mongoexport wrote them (docs/moving.md)")
    imp.add_argument("--verify", metavar="URL",
                     help="with --from-cockpit: after the import, compare a sample of every model and asset as "
                          "the running Cockpit at URL and Quire answer it (with --key)")
    imp.add_argument("--key", help="with --verify: a Cockpit API key (imported with the site, so Quire takes it too)")
    imp.add_argument("--dry-run", action="store_true", help="with --from-cockpit: print the plan, store nothing")
    imp.add_argument("--report", metavar="FILE",
                     help="with --from-cockpit: where to write the report of what did not come over as it was "
                          "(default: cockpit-import-report.json in the data folder)")
    imp.set_defaults(func=cmd_import)

    search = sub.add_parser("search", help="manage search indexes", description="Search index tasks.")
    search_sub = search.add_subparsers(dest="search_cmd", required=True, metavar="ACTION")
    rebuild = search_sub.add_parser("rebuild", parents=[common], help="rebuild an index from its content",
                                    description="Write every item of the index's model again and drop "
                                                "documents of items that left it; searches keep working meanwhile.")
    rebuild.add_argument("name", help="index name")
    search.set_defaults(func=cmd_search)

    previews = sub.add_parser("previews", help="manage preview links", description="Preview link tasks.")
    previews_sub = previews.add_subparsers(dest="previews_cmd", required=True, metavar="ACTION")
    previews_sub.add_parser("end", parents=[common], help="end every preview link given out so far",
                            description="Sign preview links with a new key: every link of an item or a "
                                        "page given out so far stops working, on every instance.")
    previews.set_defaults(func=cmd_previews)

    mig = sub.add_parser("migrate", parents=[common], help="copy the SQLite database to PostgreSQL",
                         description="Copy every collection of the data dir's SQLite database to PostgreSQL, "
                                     "in batches; running it again brings the target up to date (documents "
                                     "deleted in the source are removed there). --verify only compares: "
                                     "counts and checksums per collection, exit status 1 on a difference.")
    mig.add_argument("--to", required=True, metavar="URL", help="postgresql://user:password@host:port/database")
    mig.add_argument("--verify", action="store_true", help="compare source and target; copy nothing")
    mig.add_argument("--batch", type=int, default=500, metavar="N", help="documents per transaction (default 500)")
    mig.add_argument("--files", action="store_true",
                     help="also copy the uploads into the bucket of [assets] storage (with --verify: compare them)")
    mig.set_defaults(func=cmd_migrate)

    from quire.backup_cli import add_parsers as add_backup

    add_backup(sub, common, _settings)

    from quire.schema_cli import add_parser as add_schema

    add_schema(sub, common, _quire, _settings)

    from quire.l10n.cli import add_parser as add_l10n

    add_l10n(sub, common, _quire)

    from quire.assistants.cli import add_parser as add_mcp

    add_mcp(sub, common, _quire)
    return parser


def _metrics_folder(data: str) -> None:
    """A server's workers count requests in files of one folder of its own
    (quire.metrics; `<data>/.metrics/<pid>`: instances sharing a data folder
    keep theirs apart), made now, before anything imports prometheus_client,
    which reads the variable once, and before the workers are forked.
    Folders of servers that are gone are removed."""
    from quire.processes import pid_alive  # imports nothing that imports prometheus_client

    root = Path(data) / ".metrics"
    root.mkdir(parents=True, exist_ok=True)
    for folder in root.iterdir():
        if folder.is_dir() and folder.name.isdigit() and not pid_alive(int(folder.name)):
            shutil.rmtree(folder, ignore_errors=True)
    mine = root / str(os.getpid())
    shutil.rmtree(mine, ignore_errors=True)
    mine.mkdir()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(mine.resolve())


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from quire.errors import ApiError

    if getattr(args, "space", None) and args.func in (cmd_serve, cmd_demo, cmd_init, cmd_spaces, cmd_migrate):
        parser.error("--space is for commands on one site's content and settings: a server serves every space, "
                     "and quire migrate moves the main site")
    if args.func is cmd_serve or (args.func is cmd_demo and getattr(args, "serve", False)):
        _metrics_folder(args.data)

    try:
        return int(args.func(args))
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except ApiError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`quire export | head`): nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
