"""The audit log: who did what to which resource (docs/audit.md).

Every entry comes from an event of the module that made the change,
handled here inside that change's transaction: content, pages, assets,
forms and translations send theirs already (revisions and search follow
the same ones); auth sends `auth.*` for logins, keys, roles and users, the
content models `content.model.*`, export and import `bundle.*`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.audit import openapi, routes, screens
from quire.audit.routes import READ
from quire.audit.service import MAX_DETAIL_ITEMS, AuditService, names, text
from quire.auth.service import Identity
from quire.auth.users import UserService
from quire.modules import Module, NavEntry, Services

# System fields a write always moves: not "what changed"
UNTOLD = frozenset({"_modified", "_rev", "_mby", "_cby", "_created"})


def build(services: Services) -> None:
    services.add("audit", AuditService(services.store, services.settings.audit, services.jobs,
                                        services.settings.server.proxy_hops))


def changed(previous: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """Names of the top-level fields a write changed (every field of a new
    document), system fields every write moves left out."""
    before = previous or {}
    keys = {*before, *current} - UNTOLD
    return names(k for k in keys if before.get(k) != current.get(k))


def masked(name: str) -> str:
    """An unknown login name as the log keeps it: its first character and
    its length, enough to tell attempts apart, too little to read a
    password typed into the name field."""
    return f"{name[:1]}… ({len(name)} characters)"


def imported(identity: Identity) -> bool:
    """Whether a write is one of `quire import`'s (bundle.IMPORTER): its
    items and pages are not recorded one by one. The `import` entry with
    its counts stands for them; an entry per item made a 5,000-item import
    hold the write lock long enough that API reads beside it waited over
    3 s (tests/test_import_faults.py)."""
    return identity.kind == "system" and identity.key_id == "import"


def subscribe(services: Services) -> None:
    audit = services.get(AuditService)
    users = services.get(UserService)
    on = services.events.on

    def wrote(kind: str, resource: str, doc: dict[str, Any], previous: dict[str, Any] | None,
              identity: Identity) -> None:
        """`<kind>.create`, or `<kind>.update` with the names of the fields changed."""
        if imported(identity):
            return
        if previous is None:
            audit.record(f"{kind}.create", resource, doc.get("_id"), identity)
        else:
            audit.record(f"{kind}.update", resource, doc.get("_id"), identity, {"fields": changed(previous, doc)})

    # -- content items, pages, assets, forms, translations ------------------

    def item_saved(model: str, item: dict[str, Any], previous: dict[str, Any] | None, identity: Identity,
                   **_: Any) -> None:
        wrote("item", f"content/{model}", item, previous, identity)

    def item_removed(model: str, item: dict[str, Any], identity: Identity, **_: Any) -> None:
        if imported(identity):
            return
        audit.record("item.delete", f"content/{model}", item["_id"], identity)

    def item_published(model: str, item: dict[str, Any], identity: Identity, scheduled: bool = False,
                       **_: Any) -> None:
        audit.record("item.publish", f"content/{model}", item["_id"], identity, {"scheduled": scheduled})

    def item_unpublished(model: str, item: dict[str, Any], identity: Identity, scheduled: bool = False,
                         **_: Any) -> None:
        audit.record("item.unpublish", f"content/{model}", item["_id"], identity, {"scheduled": scheduled})

    def draft_saved(model: str, item: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("item.draft", f"content/{model}", item["_id"], identity)

    def draft_removed(model: str, item: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("item.draft.discard", f"content/{model}", item["_id"], identity)

    def page_saved(page: dict[str, Any], previous: dict[str, Any] | None, identity: Identity, **_: Any) -> None:
        wrote("page", "pages", page, previous, identity)

    def page_removed(page: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("page.delete", "pages", page["_id"], identity)

    def settings_saved(settings: dict[str, Any], previous: dict[str, Any] | None, identity: Identity,
                       **_: Any) -> None:
        audit.record("page.settings", "pages/settings", "settings", identity, {"fields": changed(previous, settings)})

    def menu_saved(menu: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("menu.save", "pages/menus", menu.get("_id"), identity)

    def menu_removed(menu: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("menu.delete", "pages/menus", menu.get("_id"), identity)

    def asset_saved(asset: dict[str, Any], is_update: bool, identity: Identity, **_: Any) -> None:
        detail = {"path": text(asset.get("path", ""))} if not is_update else {}
        audit.record("asset.update" if is_update else "asset.create", "assets", asset.get("_id"), identity, detail)

    def asset_removed(asset: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("asset.delete", "assets", asset.get("_id"), identity, {"path": text(asset.get("path", ""))})

    def form_saved(form: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("form.save", "inbox/forms", form.get("_id") or form.get("name"), identity)

    def form_removed(form: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("form.delete", "inbox/forms", form.get("_id") or form.get("name"), identity)

    def submission_saved(record: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("submission.update", "inbox/submissions", record.get("_id"), identity)

    def submission_removed(record: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("submission.delete", "inbox/submissions", record.get("_id"), identity)

    def project_saved(project: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("translation.save", "l10n", project.get("_id") or project.get("name"), identity)

    def project_removed(project: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("translation.delete", "l10n", project.get("_id") or project.get("name"), identity)

    # -- models -------------------------------------------------------------

    def model_saved(model: str, definition: dict[str, Any], previous: dict[str, Any] | None,
                    identity: Identity, dropped: list[str] | None = None, **_: Any) -> None:
        fields = {f["name"]: f for f in definition.get("fields", [])}
        before = {f["name"]: f for f in (previous or {}).get("fields", [])}
        detail: dict[str, Any] = {"created": previous is None}
        if previous is not None:
            detail["fields"] = names(n for n in {*fields, *before} if fields.get(n) != before.get(n))
        if dropped:
            detail["dropped"] = names(dropped)
        audit.record("model.save", "models", model, identity, detail)

    def model_renamed(model: str, renames: dict[str, str], identity: Identity, **_: Any) -> None:
        audit.record("model.rename", "models", model, identity,
                     {"renamed": {text(k): text(v) for k, v in list(renames.items())[:MAX_DETAIL_ITEMS]}})

    def model_removed(model: str, identity: Identity, **_: Any) -> None:
        audit.record("model.delete", "models", model, identity)

    # -- keys, roles, users, logins -----------------------------------------

    def key_saved(key: dict[str, Any], identity: Identity, is_update: bool = False, **_: Any) -> None:
        # the key's name and role; its text and hash never reach the handler
        audit.record("key.update" if is_update else "key.create", "keys", key["_id"], identity,
                     {"name": text(key["name"]), "role": key["role"]})

    def key_removed(key: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("key.delete", "keys", key["_id"], identity, {"name": text(key["name"]), "role": key["role"]})

    def role_saved(role: str, permissions: dict[str, bool], previous: dict[str, bool] | None, identity: Identity,
                   **_: Any) -> None:
        granted = {p for p, on in permissions.items() if on}
        before = {p for p, on in (previous or {}).items() if on}
        audit.record("role.save", "roles", role, identity,
                     {"created": previous is None, "granted": names(granted - before),
                      "revoked": names(before - granted)})

    def role_removed(role: str, identity: Identity, **_: Any) -> None:
        audit.record("role.delete", "roles", role, identity)

    def user_saved(user: dict[str, Any], changed: list[str], is_update: bool, identity: Identity, **_: Any) -> None:
        detail: dict[str, Any] = {"user": text(user.get("user", "")), "role": user.get("role")}
        if is_update:
            detail["fields"] = names(changed)  # `password` by name when it changed, never a value
        audit.record("user.update" if is_update else "user.create", "users", user["_id"], identity, detail)

    def user_removed(user: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("user.delete", "users", user["_id"], identity, {"user": text(user.get("user", ""))})

    def login(user: dict[str, Any], method: str, **_: Any) -> None:
        audit.record("login", "sessions", user["_id"], user_who(user), {"method": method})

    def login_failed(user_name: str, method: str, reason: str, **_: Any) -> None:
        # The name tried: as typed when it is a user's, else masked, since an
        # unknown name is often a password typed into the wrong field. The
        # password itself is never sent here.
        shown = user_name if not user_name or users.by_name(user_name) is not None else masked(user_name)
        audit.record("login.failed", "sessions", None, {"kind": "public", "id": None, "name": None, "role": "public"},
                     {"user": text(shown), "method": method, "reason": text(reason)})

    def logout(user_id: str, reason: str, identity: Identity | None = None, **_: Any) -> None:
        author = who_of_user(user_id) if identity is None else identity
        audit.record("logout", "sessions", user_id, author, {"reason": reason})

    def user_who(user: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "user", "id": user["_id"], "name": user.get("user"), "role": user.get("role")}

    def who_of_user(user_id: str) -> dict[str, Any]:
        user = users.get(user_id)
        if user is None:
            return {"kind": "user", "id": user_id, "name": None, "role": None}
        return user_who(user)

    def previews_ended(identity: Identity, **_: Any) -> None:
        audit.record("previews.end", "previews", None, identity)

    # -- webhooks ---------------------------------------------------------------

    def webhook_saved(webhook: dict[str, Any], previous: dict[str, Any] | None, identity: Identity,
                      **_: Any) -> None:
        """Its name and which fields changed: never its URL or headers, which
        may carry a receiver's credentials."""
        if previous is None:
            audit.record("webhook.create", "webhooks", webhook["_id"], identity, {"name": text(webhook["name"])})
        else:
            fields = [f for f in changed(previous, webhook) if f != "modified"]
            audit.record("webhook.update", "webhooks", webhook["_id"], identity,
                         {"name": text(webhook["name"]), "fields": fields})

    def webhook_rotated(webhook: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("webhook.rotate", "webhooks", webhook["_id"], identity, {"name": text(webhook["name"])})

    def webhook_removed(webhook: dict[str, Any], identity: Identity, **_: Any) -> None:
        audit.record("webhook.delete", "webhooks", webhook["_id"], identity, {"name": text(webhook["name"])})

    # -- export and import --------------------------------------------------

    def exported(parts: list[str], identity: Identity, **_: Any) -> None:
        audit.record("export", "bundle", None, identity, {"parts": names(parts)})

    def bundle_imported(counts: dict[str, int], identity: Identity, **_: Any) -> None:
        audit.record("import", "bundle", None, identity, {"counts": {text(k): v for k, v in counts.items()}})

    for event, handler in (
        ("content.item.saved", item_saved), ("content.item.remove", item_removed),
        ("content.item.publish", item_published), ("content.item.unpublish", item_unpublished),
        ("content.draft.saved", draft_saved), ("content.draft.remove", draft_removed),
        ("pages.page.saved", page_saved), ("pages.page.remove", page_removed),
        ("pages.settings.saved", settings_saved), ("pages.menu.save", menu_saved),
        ("pages.menu.remove", menu_removed), ("assets.asset.save", asset_saved),
        ("assets.asset.remove", asset_removed), ("inbox.form.save", form_saved),
        ("inbox.form.remove", form_removed), ("inbox.submission.save", submission_saved),
        ("inbox.submission.remove", submission_removed), ("l10n.project.save", project_saved),
        ("l10n.project.remove", project_removed),
        ("content.model.save", model_saved), ("content.model.rename", model_renamed),
        ("content.model.remove", model_removed),
        ("auth.key.save", key_saved), ("auth.key.remove", key_removed), ("auth.role.save", role_saved),
        ("auth.role.remove", role_removed), ("auth.user.save", user_saved), ("auth.user.remove", user_removed),
        ("auth.login", login), ("auth.login.failed", login_failed), ("auth.logout", logout),
        ("bundle.export", exported), ("bundle.import", bundle_imported),
        ("webhooks.webhook.save", webhook_saved), ("webhooks.webhook.rotate", webhook_rotated),
        ("webhooks.webhook.remove", webhook_removed), ("content.previews.end", previews_ended),
    ):
        on(event, handler)


HERE = Path(__file__).parent

module = Module("audit", build=build, subscribe=subscribe, openapi=openapi.paths,
                routes=[*routes.routes, *screens.routes], templates=HERE / "templates",
                nav=[NavEntry("Audit log", "/studio/settings/audit", "Settings",
                              lambda identity: identity.can("audit/read"), order=92)],
                permissions=(READ,))
