"""Export and import bundles: models, locales, roles, items, pages, menus,
page settings and translation projects as one JSON document, for moving a
project between instances and for seeding.

API keys and users are not part of a bundle: they are secrets of one instance.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from quire.auth.service import Identity
from quire.content.models import parse_model
from quire.errors import BadRequest
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


async def import_bundle(quire: Quire, bundle: Any) -> dict[str, int]:
    """Load a bundle in one transaction: all of it or nothing."""
    if not isinstance(bundle, dict) or bundle.get("quire") != FORMAT:
        raise BadRequest('Not a Quire bundle (expected {"quire": 1, ...})')
    counts = {"models": 0, "locales": 0, "roles": 0, "items": 0, "pages": 0, "menus": 0,
              "translation projects": 0, "forms": 0}
    items = bundle.get("items") or {}
    if not isinstance(items, dict):
        raise BadRequest("items must be an object keyed by model name")
    async with quire.store.atomic():
        if bundle.get("locales"):
            quire.locales.save(bundle["locales"])
            counts["locales"] = len(bundle["locales"])
        for role in bundle.get("roles") or []:
            quire.auth.save_role(role["name"], {"permissions": role.get("permissions", {})})
            counts["roles"] += 1
        for definition in bundle.get("models") or []:
            if not isinstance(definition, dict) or not isinstance(definition.get("name"), str):
                raise BadRequest("every model needs a name")
            quire.models.save(parse_model(definition["name"], definition))
            counts["models"] += 1
        for name, docs in items.items():
            counts["items"] += await _import_items(quire, name, docs)
        counts["pages"] = await quire.pages.load(bundle.get("pages") or [], IMPORTER)
        for menu in bundle.get("menus") or []:
            if not isinstance(menu, dict):
                raise BadRequest("every menu must be an object")
            # by name: ids of menus are not referenced anywhere
            await quire.menus.save({k: v for k, v in menu.items() if k != "_id"}, IMPORTER)
            counts["menus"] += 1
        if bundle.get("pageSettings"):
            await quire.menus.save_settings(bundle["pageSettings"], IMPORTER)
        for form in bundle.get("forms") or []:
            counts["forms"] += await _import_form(quire, form)
        for project in bundle.get("l10n") or []:
            if not isinstance(project, dict) or not isinstance(project.get("name"), str):
                raise BadRequest("every translation project needs a name")
            await quire.l10n.put(project["name"], project, IMPORTER)
            counts["translation projects"] += 1
    return counts


async def _import_form(quire: Quire, form: Any) -> int:
    """A form keeps its id and token, so the site's forms keep working."""
    if not isinstance(form, dict) or not is_id(form.get("_id")) or not isinstance(form.get("token"), str):
        raise BadRequest("every form needs an _id and a token")
    clean = check_form(form)
    doc = {**{k: form[k] for k in ("_id", "token", "_created", "_modified") if k in form}, **clean}
    with refusals_as_412(f"form {doc['_id']}: "):
        await quire.events.emit("inbox.form.save", form=doc, identity=IMPORTER)
    quire.forms.forms.replace({"group": "", "emails": [], "domains": [], "fields": [], "honeypot": None,
                               "languages": [], "store": True, **doc})
    return 1


async def _import_items(quire: Quire, name: str, docs: Any) -> int:
    model = quire.models.get(name)
    coll = quire.content.collection(model)
    if not isinstance(docs, list):
        raise BadRequest(f"items.{name} must be a list")
    for doc in docs:
        if not isinstance(doc, dict) or not isinstance(doc.get("_id"), str):
            raise BadRequest(f"every item of {name} needs an _id")
        fields = {k: v for k, v in doc.items() if not k.startswith("_")}
        item = {**quire.content.check_data(model, fields, IMPORTER)}
        item.update({k: doc[k] for k in KEPT_SYSTEM if k in doc})
        is_update = coll.get(item["_id"]) is not None
        with refusals_as_412(f"{name}/{item['_id']}: "):
            await quire.events.emit("content.item.save.before", model=name, item=item,
                                    is_update=is_update, identity=IMPORTER)
        coll.replace(item)
        await quire.content.stored(name, item, is_update, IMPORTER)
        quire.store.after_commit(
            lambda item=item, is_update=is_update: quire.events.emit_after(
                "content.item.save.after", model=name, item=item, is_update=is_update, identity=IMPORTER
            )
        )
    return len(docs)
