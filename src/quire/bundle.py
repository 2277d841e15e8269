"""Export and import bundles: models, locales, roles, items, pages, menus,
page settings and translation projects as one JSON document, for moving a
project between instances and for seeding.

API keys and users are not part of a bundle: they are secrets of one instance.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from quire.auth.service import Identity
from quire.content.models import Model, parse_model
from quire.errors import ApiError, BadRequest
from quire.events import refusals_as_412
from quire.ids import is_id
from quire.inbox.forms import FORMS, check_form
from quire.l10n.service import PROJECTS
from quire.pages.menus import MENUS, SETTINGS

if TYPE_CHECKING:
    from quire.app import Quire

FORMAT = 1
KEPT_SYSTEM = ("_id", "_created", "_modified", "_cby", "_mby", "_state", "_pid", "_o", "_model")
IMPORTER = Identity("admin", key_id="import")
# Items are committed in batches of `[store] import_batch_items`, and at the
# latest after BATCH_SECONDS, so that other writers wait at most about that
# long; BATCH_GAP is the pause between batches in which they get the lock.
BATCH_SECONDS = 0.25
BATCH_GAP = 0.025


@dataclass
class Progress:
    """How far an import got: items of the bundle, and items committed."""

    items: int = 0
    stored: int = 0


def export_bundle(quire: Quire) -> Iterator[bytes]:
    """The bundle as chunks of JSON, items streamed model by model."""
    head = {
        "quire": FORMAT,
        "models": [m.to_json() for m in quire.models.all()],
        "locales": [loc for loc in quire.locales.list() if not loc["default"]],
        "roles": [r for r in quire.auth.list_roles() if r["name"] != "admin"],
        "pages": quire.pages.collection().find(),  # creation order: the default list order
        "menus": quire.store.collection(MENUS).find(),
        "pageSettings": quire.store.collection(SETTINGS).get("settings"),
        "forms": quire.store.collection(FORMS).find(None, [(("name",), 1)]),
        "l10n": [{k: p[k] for k in ("name", "label", "locales", "keys")}
                 for p in quire.store.collection(PROJECTS).find(None, [(("name",), 1)])],
    }
    yield orjson.dumps(head)[:-1] + b',"items":{'
    for i, model in enumerate(quire.models.all()):
        yield (b"," if i else b"") + orjson.dumps(model.name) + b":["
        first = True
        for rows in quire.store.collection(model.collection).stream_raw():
            if rows:
                yield (b"" if first else b",") + b",".join(rows)
                first = False
        yield b"]"
    yield b"}}"


async def import_bundle(
    quire: Quire, bundle: Any, batch: int | None = None, progress: Progress | None = None
) -> dict[str, int]:
    """Load a bundle: check all of it first, then store it.

    A bad part anywhere (an item that fails its model's checks included)
    refuses the whole bundle and stores nothing. Models, locales, roles,
    pages, menus, forms and translation projects are stored in one
    transaction; items follow in transactions of `batch` items, so that a
    long import lets other writers in between batches. Items are matched by
    `_id`: running the same import again changes nothing. `progress`, if
    given, follows the committed items, for a caller whose import stops."""
    if not isinstance(bundle, dict) or bundle.get("quire") != FORMAT:
        raise BadRequest('Not a Quire bundle (expected {"quire": 1, ...})')
    models = _check_models(bundle.get("models"))
    _check_named(bundle, "roles", "role")
    _check_named(bundle, "l10n", "translation project")
    _check_list(bundle, "menus", "menu")
    _check_list(bundle, "pages", "page")
    forms = [_check_form(form) for form in _as_list(bundle, "forms")]
    items = _check_items(quire, bundle, models)
    progress = progress or Progress()
    progress.items = sum(len(docs) for docs in items.values())
    counts = {"models": 0, "locales": 0, "roles": 0, "items": 0, "pages": 0, "menus": 0,
              "translation projects": 0, "forms": 0}
    store = quire.store
    # An import may wait for the write lock as long as a command line may.
    async with store.atomic(timeout=store.blocking_timeout):
        if bundle.get("locales"):
            quire.locales.save(bundle["locales"])
            counts["locales"] = len(bundle["locales"])
        for role in _as_list(bundle, "roles"):
            quire.auth.save_role(role["name"], {"permissions": role.get("permissions", {})})
            counts["roles"] += 1
        for model in models.values():
            quire.models.save(model)
            counts["models"] += 1
        counts["pages"] = await quire.pages.load(_as_list(bundle, "pages"), IMPORTER)
        for menu in _as_list(bundle, "menus"):
            # by name: ids of menus are not referenced anywhere
            await quire.menus.save({k: v for k, v in menu.items() if k != "_id"}, IMPORTER)
            counts["menus"] += 1
        if bundle.get("pageSettings"):
            await quire.menus.save_settings(bundle["pageSettings"], IMPORTER)
        for form in forms:
            counts["forms"] += await _import_form(quire, form)
        for project in _as_list(bundle, "l10n"):
            await quire.l10n.put(project["name"], project, IMPORTER)
            counts["translation projects"] += 1
    size = batch or quire.settings.store.import_batch_items
    await _import_items(quire, items, size, counts, progress)
    return counts


async def _import_items(quire: Quire, items: dict[str, list[dict[str, Any]]], size: int,
                        counts: dict[str, int], progress: Progress) -> None:
    """Items in transactions of `size` (or BATCH_SECONDS of work);
    `progress.stored` follows the commits."""
    store = quire.store
    for name, docs in items.items():
        model = quire.models.get(name)
        coll = quire.content.collection(model)
        start = 0
        while start < len(docs):
            async with store.atomic(timeout=store.blocking_timeout):
                # First of the batch's after-commit callbacks: it runs right at
                # the commit, before the events' awaits, where a Ctrl-C may
                # land (the count is read when it runs: the batch's end).
                store.after_commit(lambda: setattr(progress, "stored", counts["items"]))
                ends = time.monotonic() + BATCH_SECONDS
                for item in docs[start : start + size]:
                    await _import_item(quire, name, coll, item)
                    start += 1
                    counts["items"] += 1
                    if time.monotonic() > ends:
                        break  # long enough holding the lock: commit here
            # Writers of other processes poll for the lock (see
            # SqliteStore.atomic); a short gap lets them in.
            await asyncio.sleep(BATCH_GAP)


def _as_list(bundle: dict[str, Any], key: str) -> list[Any]:
    return bundle.get(key) or []


def _check_list(bundle: dict[str, Any], key: str, what: str) -> None:
    value = _as_list(bundle, key)
    if not isinstance(value, list):
        raise BadRequest(f"{key} must be a list")
    if not all(isinstance(entry, dict) for entry in value):
        raise BadRequest(f"every {what} must be an object")


def _check_named(bundle: dict[str, Any], key: str, what: str) -> None:
    _check_list(bundle, key, what)
    if not all(isinstance(entry.get("name"), str) for entry in _as_list(bundle, key)):
        raise BadRequest(f"every {what} needs a name")


def _check_models(definitions: Any) -> dict[str, Model]:
    if not isinstance(definitions or [], list):
        raise BadRequest("models must be a list")
    models: dict[str, Model] = {}
    for definition in definitions or []:
        if not isinstance(definition, dict) or not isinstance(definition.get("name"), str):
            raise BadRequest("every model needs a name")
        models[definition["name"]] = parse_model(definition["name"], definition)
    return models


def _check_form(form: Any) -> dict[str, Any]:
    if not isinstance(form, dict) or not is_id(form.get("_id")) or not isinstance(form.get("token"), str):
        raise BadRequest("every form needs an _id and a token")
    clean = check_form(form)
    return {**{k: form[k] for k in ("_id", "token", "_created", "_modified") if k in form}, **clean}


def _check_items(quire: Quire, bundle: dict[str, Any], models: dict[str, Model]) -> dict[str, list[dict[str, Any]]]:
    """Every item checked against its model as the bundle defines it (and
    its locales), before anything is stored: the items ready to store."""
    items = bundle.get("items") or {}
    if not isinstance(items, dict):
        raise BadRequest("items must be an object keyed by model name")
    locales = bundle.get("locales")
    codes = None
    if locales and isinstance(locales, list):
        codes = [e["i18n"] for e in locales if isinstance(e, dict) and isinstance(e.get("i18n"), str)]
    out: dict[str, list[dict[str, Any]]] = {}
    for name, docs in items.items():
        model = models.get(name) or quire.models.get(name)
        if not isinstance(docs, list):
            raise BadRequest(f"items.{name} must be a list")
        ready = out[name] = []
        for doc in docs:
            if not isinstance(doc, dict) or not isinstance(doc.get("_id"), str):
                raise BadRequest(f"every item of {name} needs an _id")
            # _state, _pid and _o are checked as an API write checks them
            fields = {k: v for k, v in doc.items() if not k.startswith("_") or k in ("_state", "_pid", "_o")}
            try:
                item = quire.content.check_data(model, fields, IMPORTER, codes=codes)
                _check_stamps(doc)
            except ApiError as exc:
                exc.message = f"{name}/{doc['_id']}: {exc.message}"
                raise
            item.update({k: doc[k] for k in KEPT_SYSTEM if k in doc})
            ready.append(item)
    return out


def _check_stamps(doc: dict[str, Any]) -> None:
    """Times are whole seconds, authors are key or user ids (or null)."""
    errors: dict[str, str] = {}
    for key in ("_created", "_modified"):
        if key in doc and (isinstance(doc[key], bool) or not isinstance(doc[key], int)):
            errors[key] = "must be a time in whole seconds since 1970"
    for key in ("_cby", "_mby"):
        if key in doc and doc[key] is not None and not isinstance(doc[key], str):
            errors[key] = "must be a string or null"
    if errors:
        raise BadRequest("Invalid item data: " + "; ".join(f"{k} {v}" for k, v in errors.items()),
                         fields=sorted(errors))


def _fill_system(model: Model, coll: Any, item: dict[str, Any], current: dict[str, Any] | None) -> None:
    """System fields a bundle leaves out (one written by hand, for seeding)
    are kept from the stored item or set as an API create sets them: reads
    ask for `_state` 1 and sort by `_created`, so an item without them would
    be stored but never shown. Running the import again changes nothing."""
    now = int(time.time())
    defaults: dict[str, Any] = {"_state": 1, "_created": now, "_modified": now,
                                "_cby": IMPORTER.actor, "_mby": IMPORTER.actor}
    if model.type == "singleton":
        defaults["_model"] = model.name
    if model.type == "tree":
        defaults["_pid"] = None
    for key, value in defaults.items():
        if key not in item:
            item[key] = current[key] if current is not None and key in current else value
    if model.type == "tree" and "_o" not in item:
        # after its siblings, as a new node of the API
        item["_o"] = current["_o"] if current is not None and "_o" in current else coll.count({"_pid": item["_pid"]})


async def _import_form(quire: Quire, doc: dict[str, Any]) -> int:
    """A form keeps its id and token, so the site's forms keep working."""
    with refusals_as_412(f"form {doc['_id']}: "):
        await quire.events.emit("inbox.form.save", form=doc, identity=IMPORTER)
    quire.forms.forms.replace({"group": "", "emails": [], "domains": [], "fields": [], "honeypot": None,
                               "languages": [], "store": True, **doc})
    return 1


async def _import_item(quire: Quire, name: str, coll: Any, item: dict[str, Any]) -> None:
    """Store one checked item with its events (inside the caller's batch)."""
    current = coll.get(item["_id"])
    is_update = current is not None
    _fill_system(quire.models.get(name), coll, item, current)
    with refusals_as_412(f"{name}/{item['_id']}: "):
        await quire.events.emit("content.item.save.before", model=name, item=item,
                                is_update=is_update, identity=IMPORTER)
    coll.replace(item)
    await quire.content.stored(name, item, is_update, IMPORTER)
    quire.store.after_commit(
        lambda: quire.events.emit_after(
            "content.item.save.after", model=name, item=item, is_update=is_update, identity=IMPORTER
        )
    )
