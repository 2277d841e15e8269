"""An import from a Cockpit folder: planned whole, then stored in steps.

`make_plan` reads everything once without writing: the models are mapped,
every item is converted and checked as Quire checks an API write, every
asset's file is found and sniffed, and what cannot come over as it was is
in the report. `--dry-run` stops there. `run_plan` then stores through the
services, as every other write does (events, revisions, search, audit):
the site's settings (locales, models, roles, asset folders) in one
transaction, then assets and items in batches that let other writers in,
then API keys. Everything is matched by id, so running the same import
again replaces in place and finishes an import that was stopped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from quire.assets import imported as imported_assets
from quire.batches import store_in_batches
from quire.bundle import IMPORTER
from quire.cockpit.folder import BadDocument, CockpitFolder, NotCockpit
from quire.cockpit.inbox import InboxPlan, plan_inbox, store_form, store_submission, submission
from quire.cockpit.models import Facts, MappedModel, map_model
from quire.cockpit.report import Report
from quire.cockpit.values import ItemConverter
from quire.content.fields import SUB_LOCALE_KEY
from quire.content.models import Model, parse_model
from quire.errors import ApiError
from quire.ids import is_id
from quire.trees import MISSING, parent_problem

if TYPE_CHECKING:
    from quire.modules import Services

ASSET_BATCH = 50  # assets per transaction (each writes a file first)
ITEM_BATCH = 500
# Cockpit permission -> Quire's, where Quire has the same thing
SAME_PERMISSIONS = {"assets/upload", "assets/edit", "assets/delete", "inbox/manage", "inbox/submissions"}
# Quire's folders are made and renamed with assets/edit, deleted with assets/delete
FOLDER_PERMISSIONS = {"assets/folders/create": "assets/edit", "assets/folders/edit": "assets/edit",
                      "assets/folders/delete": "assets/delete"}
CONTENT_ACTIONS = {"read", "create", "update", "delete", "publish"}
# Collections the import reads (database/table as `CockpitFolder.collections` names them)
TRANSLATED_ASSET_KEYS = {"title", "description", "altText"}
READ = {"system/locales", "system/roles", "system/api_keys", "app/assets", "assets/folders", "content/singletons",
        "inbox/forms", "inbox/submissions"}

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class PlannedModel:
    raw: dict[str, Any]
    mapped: MappedModel
    model: Model
    collection: str  # where Cockpit keeps its items
    items: int = 0
    skipped: set[str] = field(default_factory=set)  # ids whose item is left out (reported)
    roots: set[str] = field(default_factory=set)  # tree nodes whose parent did not come over
    replaces: int = 0  # items of the site with the same id (replaced in place)
    site_model: int | None = None  # the site's model of the same name: its items (None: no such model)


@dataclass
class Plan:
    folder: CockpitFolder
    report: Report
    locales: list[dict[str, str]] = field(default_factory=list)  # every locale after the import
    new_locales: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)  # Cockpit's locale codes
    models: list[PlannedModel] = field(default_factory=list)
    roles: dict[str, dict[str, bool]] = field(default_factory=dict)
    folders: list[dict[str, Any]] = field(default_factory=list)  # parents first
    assets: int = 0
    asset_ids: list[str] = field(default_factory=list)  # of the assets that come over
    skipped_assets: set[str] = field(default_factory=set)
    keys: list[dict[str, Any]] = field(default_factory=list)
    inbox: InboxPlan = field(default_factory=InboxPlan)

    def counts(self) -> dict[str, int]:
        return {
            "locales": len(self.new_locales),
            "models": len(self.models),
            "items": sum(m.items for m in self.models),
            "asset folders": len(self.folders),
            "assets": self.assets,
            "roles": len(self.roles),
            "API keys": len(self.keys),
            "forms": len(self.inbox.forms),
            "form submissions": self.inbox.submissions,
        }

    def describe(self) -> str:
        """The plan in words, as `--dry-run` prints it."""
        lines = [f"From {self.folder.storage}:"]
        if self.new_locales:
            lines.append(f"  locales: {', '.join(self.new_locales)}")
        for planned in self.models:
            left = f", {len(planned.skipped)} left out" if planned.skipped else ""
            if planned.replaces:
                left += f", {planned.replaces} replacing items of the site with the same id"
            if planned.site_model is not None:
                left += (f"; REPLACES the site's model {planned.mapped.name} (its {planned.site_model} items stay, "
                         "under this definition)")
            named = f" (from {planned.mapped.source})" if planned.mapped.source != planned.mapped.name else ""
            lines.append(f"  model {planned.mapped.name}{named}: {planned.mapped.kind}, "
                         f"{len(planned.model.fields)} fields, {planned.items} items{left}")
        lines.append(f"  assets: {self.assets} in {len(self.folders)} folders"
                     + (f", {len(self.skipped_assets)} left out" if self.skipped_assets else ""))
        lines.append(f"  roles: {', '.join(sorted(self.roles)) or 'none'}")
        lines.append(f"  API keys: {len(self.keys)}")
        if self.inbox.forms:
            lines.append(f"  forms: {len(self.inbox.forms)}, with {self.inbox.submissions} submissions")
        lines.append(f"  report: {self.report.summary()}")
        return "\n".join(lines)


def make_plan(folder: CockpitFolder, quire: Services, progress: Progress | None = None) -> Plan:
    """Read and check everything; nothing is written."""
    plan = Plan(folder, Report())
    bad: list[BadDocument] = []
    _plan_locales(plan, quire)
    _plan_models(plan, quire, bad, progress)
    _plan_roles(plan, quire)
    _plan_folders(plan)
    _plan_assets(plan, quire, bad, progress)
    _plan_keys(plan)
    plan.inbox = plan_inbox(folder, plan.report)
    _plan_rest(plan)
    for row in bad:
        plan.report.note("document", f"{row.collection} row {row.row}", f"{row.problem}: left out")
    return plan


def _plan_locales(plan: Plan, quire: Services) -> None:
    existing = [loc for loc in quire.locales.list() if not loc.get("default")]
    known = {loc["i18n"] for loc in existing}
    plan.locales = [{"i18n": loc["i18n"], "name": loc["name"]} for loc in existing]
    for doc in plan.folder.documents("system/locales"):
        code = doc.get("i18n")
        if not isinstance(code, str) or not code:
            continue
        plan.codes.append(code)
        if doc.get("enabled") is False:
            plan.report.note("locale", code, "disabled in Cockpit; Quire has no disabled locales, so it is enabled")
        if code not in known and code != "default":
            known.add(code)
            plan.new_locales.append(code)
            plan.locales.append({"i18n": code, "name": str(doc.get("name") or code)})
    try:
        quire.locales._checked(plan.locales)
    except ApiError as exc:
        raise NotCockpit(f"system/locales: {exc.message}") from None


def _source_collection(raw: dict[str, Any]) -> str:
    name = str(raw.get("name"))
    return "content/singletons" if raw.get("type") == "singleton" else f"content/collections/{name}"


def _documents(plan: Plan, raw: dict[str, Any], bad: list[BadDocument] | None) -> Iterator[dict[str, Any]]:
    collection = _source_collection(raw)
    for doc in plan.folder.documents(collection, bad):
        if raw.get("type") != "singleton" or doc.get("_model") == raw.get("name"):
            yield doc


def _plan_models(plan: Plan, quire: Services, bad: list[BadDocument], progress: Progress | None) -> None:
    raws = [plan.folder.read_model(path) for path in plan.folder.model_files()]
    facts = Facts()
    total = sum(plan.folder.count(_source_collection(raw)) for raw in raws)
    done = 0
    # First look: what the items hold decides parts of the mapping.
    for raw in raws:
        first = map_model(raw, Report())
        converter = ItemConverter(raw, first, plan.codes, Report())
        for doc in _documents(plan, raw, None):
            converter.convert(doc, facts)
            done += 1
            if progress is not None and done % 1000 == 0:
                progress("reading items", done, total * 2)
    names: set[str] = set()
    for raw in raws:
        mapped = map_model(raw, plan.report, facts)
        while mapped.name in names:
            mapped.name += "_"
            mapped.definition["name"] = mapped.name
        names.add(mapped.name)
        try:
            model = parse_model(mapped.name, mapped.definition)
        except ApiError as exc:
            raise NotCockpit(f"model {mapped.source}: Quire cannot take its definition: {exc.message}") from None
        plan.models.append(PlannedModel(raw, mapped, model, _source_collection(raw)))
    # Second look: every item converted and checked as Quire will store it.
    for planned in plan.models:
        converter = ItemConverter(planned.raw, planned.mapped, plan.codes, plan.report)
        parents: dict[str, Any] = {}
        seen_single = False
        target = quire.store.collection(planned.model.collection)
        there = set(target.ids()) if target.exists() else set()  # items the import replaces
        if quire.models.find(planned.mapped.name) is not None:
            planned.site_model = len(there)
        for doc in _documents(plan, planned.raw, bad):
            done += 1
            if progress is not None and done % 1000 == 0:
                progress("checking items", done, total * 2)
            item = converter.convert(doc)
            if item is None:
                continue
            if planned.mapped.kind == "singleton":
                if seen_single:
                    plan.report.note("item", f"{planned.mapped.source}/{item['_id']}",
                                     "a second value of a singleton: left out", doc)
                    planned.skipped.add(item["_id"])
                    continue
                seen_single = True
            size = len(orjson.dumps(item))
            if size > quire.max_body:
                plan.report.note("item", f"{planned.mapped.source}/{item['_id']}",
                                 f"{size} bytes, more than an API write may send ([api] max_body_bytes, "
                                 f"{quire.max_body}): left out", doc)
                planned.skipped.add(item["_id"])
                continue
            try:
                quire.content.check_imported(planned.model, item, IMPORTER, codes=_all_codes(plan))
            except ApiError as exc:
                plan.report.note("item", f"{planned.mapped.source}/{item['_id']}", f"left out: {exc.message}", doc)
                planned.skipped.add(item["_id"])
                continue
            planned.items += 1
            planned.replaces += item["_id"] in there
            if planned.mapped.kind == "tree":
                parents[item["_id"]] = item.get("_pid")
        if planned.mapped.kind == "tree":
            _plan_tree(plan, planned, parents)


def _plan_tree(plan: Plan, planned: PlannedModel, parents: dict[str, Any]) -> None:
    """A node whose parent is not among the imported nodes, or that would be
    its own ancestor, becomes a top-level node (reported)."""
    for node, parent in parents.items():
        if parent is None:
            continue
        if parent_problem(node, parent, lambda n: parents.get(n, MISSING)):
            plan.report.note("item", f"{planned.mapped.source}/{node}",
                             f"its parent {parent} is not among the imported items (or it is its own "
                             "ancestor): imported as a top-level item")
            planned.roots.add(node)


def _all_codes(plan: Plan) -> list[str]:
    return [loc["i18n"] for loc in plan.locales]


def _plan_roles(plan: Plan, quire: Services) -> None:
    known = {m.mapped.source: m.mapped.name for m in plan.models}
    for doc in plan.folder.documents("system/roles"):
        source = str(doc.get("appid") or doc.get("name") or "")
        if not source:
            continue
        if source == "admin":
            plan.report.note("role", source, "Cockpit's admin role is Quire's built-in admin role")
            continue
        name = _role_name(source)
        if name != source:
            plan.report.note("role", source, f"renamed to {name}: Quire role names are letters, digits, - and _")
        if name == "public":
            plan.report.note("role", source, "Quire's public role (requests without a key) gets this role's "
                             "permissions")
        permissions: dict[str, bool] = {}
        raw = doc.get("permissions")
        for permission, granted in (raw.items() if isinstance(raw, dict) else []):
            if granted is not True:
                continue
            mapped = _permission(str(permission), known, quire.permissions)
            if mapped is None:
                plan.report.note("role", f"{source} {permission}", "Quire has no such permission; not granted "
                                 "(Quire's management API is one permission, system/manage: grant it by hand "
                                 "where it is meant)")
            else:
                permissions[mapped] = True
        # Cockpit answers its asset API to every key: a site's key that read
        # pictures there must read them here too
        permissions["assets/read"] = True
        plan.roles[name] = permissions


def _role_name(source: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", source) or "role"


def _permission(permission: str, models: dict[str, str], declared: set[str]) -> str | None:
    parts = permission.split("/")
    if len(parts) == 3 and parts[0] == "content":
        model, action = parts[1], parts[2]
        if action == "updateorder":
            action = "update"  # Quire orders a tree's items with the update permission
        if model in models and action in CONTENT_ACTIONS:
            return f"content/{models[model]}/{action}"
        if model == "*" and action in CONTENT_ACTIONS:
            return f"content/*/{action}"
        return None
    permission = FOLDER_PERMISSIONS.get(permission, permission)
    if permission in SAME_PERMISSIONS and permission in declared:
        return permission
    return None


def _plan_folders(plan: Plan) -> None:
    folders = {}
    for doc in plan.folder.documents("assets/folders"):
        if is_id(doc.get("_id")) and isinstance(doc.get("name"), str):
            parent = doc.get("_p") or doc.get("parent") or None
            folders[doc["_id"]] = {"_id": doc["_id"], "name": doc["name"].replace("/", "-").strip() or "folder",
                                   "parent": parent, "_created": doc.get("_created"),
                                   "_modified": doc.get("_modified")}
    for folder in folders.values():
        if folder["parent"] is not None and folder["parent"] not in folders:
            plan.report.note("folder", folder["name"], f"its parent {folder['parent']} is missing: "
                             "imported at the top level")
            folder["parent"] = None
    placed: set[str] = set()
    while len(placed) < len(folders):  # parents first
        ready = [f for f in folders.values() if f["_id"] not in placed and (f["parent"] is None or f["parent"] in placed)]
        if not ready:  # a circle: break it at the top level
            circle = next(f for f in folders.values() if f["_id"] not in placed)
            plan.report.note("folder", circle["name"], "is inside itself: imported at the top level")
            circle["parent"] = None
            continue
        for folder in ready:
            placed.add(folder["_id"])
            plan.folders.append(folder)


def _asset_records(plan: Plan, bad: list[BadDocument] | None) -> Iterator[dict[str, Any]]:
    folders = {f["_id"] for f in plan.folders}
    for doc in plan.folder.documents("assets", bad):
        record = dict(doc)
        if record.get("folder") not in folders:
            record["folder"] = None
        for key in sorted(k for k in doc if SUB_LOCALE_KEY.match(k) and k.split("_")[0] in TRANSLATED_ASSET_KEYS):
            if bad is not None and doc[key] not in (None, ""):
                plan.report.note("asset", f"{doc.get('path')} {key}", "Quire's assets have one title, "
                                 "description and alt text, not one per locale: left out", doc[key])
        fp = record.get("fp") or record.get("focalPoint")
        if isinstance(fp, dict) and {"x", "y"} <= set(fp):
            record["fp"] = {"x": fp["x"], "y": fp["y"]}
        else:
            record.pop("fp", None)
        yield record


def _plan_assets(plan: Plan, quire: Services, bad: list[BadDocument], progress: Progress | None) -> None:
    total = plan.folder.count("assets")
    for done, record in enumerate(_asset_records(plan, bad), 1):
        if progress is not None and done % 100 == 0:
            progress("checking assets", done, total)
        where = str(record.get("path") or record.get("_id"))
        found = plan.folder.upload(str(record.get("path") or ""))
        if found is None:
            plan.report.note("asset", where, "its file is missing from storage/uploads: left out "
                             "(items that show it answer null)", record)
            plan.skipped_assets.add(str(record.get("_id")))
            continue
        try:
            imported_assets.prepare(quire.assets, record, found.read_bytes(), IMPORTER)
        except ApiError as exc:
            plan.report.note("asset", where, f"left out: {exc.message}", record)
            plan.skipped_assets.add(str(record.get("_id")))
            continue
        plan.assets += 1
        plan.asset_ids.append(str(record["_id"]))


def _plan_keys(plan: Plan) -> None:
    roles = set(plan.roles) | {"admin", "public"}
    for doc in plan.folder.documents("system/api_keys"):
        name = str(doc.get("name") or "key")
        role = _role_name(str(doc.get("role") or ""))
        text = doc.get("key")
        if text == "public":  # Cockpit's access without a key: Quire's public role
            _plan_public(plan, role, name)
        elif not is_id(doc.get("_id")) or not isinstance(text, str):
            plan.report.note("key", name, "has no id or no key text: not imported")
        elif role not in roles:
            plan.report.note("key", name, f"its role {doc.get('role')!r} is not imported: not imported")
        elif len(text) < 16:
            plan.report.note("key", name, "shorter than 16 characters, too easy to guess: not imported")
        else:
            plan.keys.append({"_id": doc["_id"], "name": name, "role": role, "key": text,
                              "_created": doc.get("_created") if isinstance(doc.get("_created"), int) else None})


def _plan_public(plan: Plan, role: str, name: str) -> None:
    """Cockpit serves requests without a key as the role of its key whose
    text is `public`; Quire as its built-in `public` role, which gets that
    role's permissions (never the admin role's: that is reported)."""
    if role == "admin":
        plan.report.note("key", name, "Cockpit lets requests without a key act as admin; Quire's public role "
                         "does not get every permission: grant what is meant by hand")
    elif role in plan.roles:
        plan.roles["public"] = dict(plan.roles[role])
        plan.report.note("key", name, f"Cockpit's access without a key (role {role}): Quire's public role "
                         "gets that role's permissions")
    else:
        plan.report.note("key", name, f"Cockpit's access without a key has the role {role!r}, which is not "
                         "imported: Quire's public role is left as it is")


def _plan_rest(plan: Plan) -> None:
    """Name every collection the import does not read."""
    read = set(READ) | {"system/log", "system/logs"}
    read |= {CockpitFolder.where(m.collection)[0] + "/" + CockpitFolder.where(m.collection)[1] for m in plan.models}
    for collection, count in plan.folder.collections().items():
        if collection in read or collection.startswith("app/") and collection != "app/assets":
            continue
        if collection == "system/users":
            plan.report.note("collection", collection, f"{count} users are not imported: Cockpit's passwords "
                             "cannot become Quire's; create users with `quire users create` or single sign-on")
        elif collection.startswith("content/collections_"):
            plan.report.note("collection", collection, f"{count} items of a model with no definition file "
                             "(storage/content/*.model.php): not imported")
        else:
            plan.report.note("collection", collection, f"{count} documents: not read by the import")


async def run_plan(plan: Plan, quire: Services, progress: Progress | None = None) -> dict[str, int]:
    """Store what the plan found; counts of what was stored."""
    store = quire.store
    counts = {key: 0 for key in plan.counts()}
    async with store.atomic(timeout=store.blocking_timeout):
        if plan.new_locales:
            quire.locales.save_items(plan.locales)
            counts["locales"] = len(plan.new_locales)
        for planned in plan.models:
            quire.models.save(planned.model, identity=IMPORTER)
            counts["models"] += 1
        for name, permissions in plan.roles.items():
            quire.auth.save_role(name, {"permissions": permissions}, IMPORTER)
            counts["roles"] += 1
        for folder in plan.folders:
            imported_assets.store_folder(quire.assets, folder)
            counts["asset folders"] += 1
        for form in plan.inbox.forms:
            store_form(quire, form)
            counts["forms"] += 1
    await _run_assets(plan, quire, counts, progress)
    await _run_items(plan, quire, counts, progress)
    await _run_submissions(plan, quire, counts)
    async with store.atomic(timeout=store.blocking_timeout):
        for key in plan.keys:
            quire.auth.import_key(key["_id"], key["name"], key["role"], key["key"], key["_created"], IMPORTER)
            counts["API keys"] += 1
        quire.events.notify("bundle.import", counts=counts, identity=IMPORTER)
    return counts


async def _run_assets(plan: Plan, quire: Services, counts: dict[str, int], progress: Progress | None) -> None:
    def entries() -> Iterator[dict[str, Any]]:
        for record in _asset_records(plan, None):
            if str(record.get("_id")) not in plan.skipped_assets:
                yield record

    async def load(record: dict[str, Any]) -> None:
        found = plan.folder.upload(str(record.get("path") or ""))
        if found is None:  # gone since the plan was made
            raise NotCockpit(f"asset {record.get('path')}: its file is gone from storage/uploads")
        data = found.read_bytes()
        doc = imported_assets.prepare(quire.assets, record, data, IMPORTER)
        await imported_assets.store(quire.assets, doc, data, IMPORTER)
        counts["assets"] += 1
        if progress is not None:
            progress("assets", counts["assets"], plan.assets)

    await store_in_batches(quire.store, entries(), load, ASSET_BATCH)


async def _run_items(plan: Plan, quire: Services, counts: dict[str, int], progress: Progress | None) -> None:
    total = sum(m.items for m in plan.models)
    codes = _all_codes(plan)
    for planned in plan.models:
        converter = ItemConverter(planned.raw, planned.mapped, plan.codes, Report())
        coll = quire.content.collection(planned.model)

        def entries(planned: PlannedModel = planned,
                    converter: ItemConverter = converter) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
            docs: Iterator[dict[str, Any]] = _documents(plan, planned.raw, None)
            if planned.mapped.kind == "tree":
                docs = iter(_parents_first(list(docs)))
            for doc in docs:
                item = converter.convert(doc, check=False)  # checked whole by `load`
                if item is None or item["_id"] in planned.skipped:
                    continue
                if item["_id"] in planned.roots:
                    item["_pid"] = None
                yield doc, item

        async def load(entry: tuple[dict[str, Any], dict[str, Any]], planned: PlannedModel = planned,
                       converter: ItemConverter = converter, coll: Any = coll) -> None:
            doc, item = entry
            try:
                checked = quire.content.check_imported(planned.model, item, IMPORTER, codes=codes)
            except ApiError:  # a value the plan left out (and reported): convert it with the checks
                item = converter.convert(doc) or item
                if item["_id"] in planned.roots:
                    item["_pid"] = None
                checked = quire.content.check_imported(planned.model, item, IMPORTER, codes=codes)
            await quire.content.store_imported(planned.model, coll, checked, IMPORTER)
            counts["items"] += 1
            if progress is not None and (counts["items"] % 100 == 0 or counts["items"] == total):
                progress("items", counts["items"], total)

        await store_in_batches(quire.store, entries(), load, quire.settings.store.import_batch_items)


async def _run_submissions(plan: Plan, quire: Services, counts: dict[str, int]) -> None:
    forms = {f["_id"] for f in plan.inbox.forms}

    def entries() -> Iterator[dict[str, Any]]:
        for doc in plan.folder.documents("inbox/submissions"):
            if str(doc.get("_id")) not in plan.inbox.skipped:
                record = submission(doc, forms, plan.folder, None)
                if record is not None:
                    yield record

    async def load(record: dict[str, Any]) -> None:
        store_submission(quire, record, plan.folder)
        counts["form submissions"] += 1

    await store_in_batches(quire.store, entries(), load, ITEM_BATCH)


def _parents_first(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {d.get("_id"): d for d in docs}
    placed: set[Any] = set()
    out: list[dict[str, Any]] = []

    def place(doc: dict[str, Any], depth: int = 0) -> None:
        if doc.get("_id") in placed:
            return
        parent = by_id.get(doc.get("_pid"))
        if parent is not None and depth < 1000:
            place(parent, depth + 1)
        if doc.get("_id") not in placed:
            placed.add(doc.get("_id"))
            out.append(doc)

    for doc in docs:
        place(doc)
    return out


def describe_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {what}" for what, n in counts.items())

