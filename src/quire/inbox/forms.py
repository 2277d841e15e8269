"""Forms (collection `inbox/forms`): what a public form accepts and where
its submissions go. The token in a form's submit URL is its credential;
rotating it retires every copy of the old URL at once."""

from __future__ import annotations

import re
import secrets
import time
from typing import Any

from quire.auth.service import Identity
from quire.bundleparts import BundlePart, Checked, as_list
from quire.emails import normal_email
from quire.errors import BadRequest, NotFound, PreconditionFailed, ValidationError
from quire.events import Events, refusals_as_412
from quire.ids import is_id, new_id
from quire.inbox import language
from quire.store import Store

FORMS = "inbox/forms"
MANAGE = "inbox/manage"
FIELD_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
HOST = re.compile(r"^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
FORM_KEYS = ("name", "group", "emails", "domains", "fields", "honeypot", "languages", "store")
READ_ONLY = ("_id", "token", "_created", "_modified")


def new_token() -> str:
    return secrets.token_urlsafe(24)


class FormService:
    def __init__(self, store: Store, events: Events) -> None:
        self.store = store
        self.events = events
        self.forms = store.collection(FORMS)
        store.ensure_indexes(FORMS, [[("token",)]])

    def by_token(self, token: str) -> dict[str, Any]:
        form = self.forms.find_one({"token": token}) if token else None
        if form is None:
            raise NotFound("Form not found")
        return form

    def all(self, identity: Identity) -> list[dict[str, Any]]:
        identity.require(MANAGE)
        return self.forms.find(None, [(("name",), 1)])

    def listed(self, identity: Identity) -> list[dict[str, Any]]:
        """The forms by group and name, for whoever may manage them or read
        their submissions (the token only for managers)."""
        if not identity.can(MANAGE):
            identity.require("inbox/submissions")
        forms = self.forms.find(None, [(("group",), 1), (("name",), 1)])
        return forms if identity.can(MANAGE) else [{k: v for k, v in f.items() if k != "token"} for f in forms]

    def get(self, form_id: str, identity: Identity) -> dict[str, Any]:
        identity.require(MANAGE)
        return self.by_id(form_id)

    def by_id(self, form_id: str) -> dict[str, Any]:
        """The form, or 404 (no permission check: for server-side code)."""
        form = self.forms.get(form_id) if is_id(form_id) else None
        if form is None:
            raise NotFound("Form not found")
        return form

    async def save(self, data: Any, identity: Identity) -> dict[str, Any]:
        """Create a form, or change one partially with `data._id`."""
        identity.require(MANAGE)
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        clean = check_form(data)
        now = int(time.time())
        async with self.store.atomic():
            form_id = data.get("_id")
            if form_id is not None:
                if not isinstance(form_id, str):
                    raise BadRequest("_id must be a string", fields=["_id"])
                form = {**self.by_id(form_id), **clean, "_modified": now}
            else:
                if "name" not in clean:
                    raise ValidationError("form", {"name": "is required"})
                form = {"_id": new_id(), "group": "", "emails": [], "domains": [], "fields": [],
                        "honeypot": None, "languages": [], "store": True, **clean,
                        "token": new_token(), "_created": now, "_modified": now}
            await self._emit_save(form, identity)
            self.forms.replace(form)
        return form

    async def rotate_token(self, form_id: str, identity: Identity) -> dict[str, Any]:
        identity.require(MANAGE)
        async with self.store.atomic():
            form = {**self.by_id(form_id), "token": new_token(), "_modified": int(time.time())}
            await self._emit_save(form, identity)
            self.forms.replace(form)
        return form

    def by_name(self, name: str) -> dict[str, Any] | None:
        """The first form of that name, if any (no permission check: for
        server-side code)."""
        return self.forms.find_one({"name": name})

    # -- bundles ----------------------------------------------------------

    def bundle_part(self) -> BundlePart:
        """Forms in export/import bundles. A form keeps its id and token, so
        the site's forms keep working after a move."""
        return BundlePart("forms", "forms", lambda: self.forms.find(None, [(("name",), 1)]),
                          _check_bundle_forms, self._load_bundle)

    async def _load_bundle(self, forms: list[dict[str, Any]], identity: Identity) -> int:
        for form in forms:
            doc = {"group": "", "emails": [], "domains": [], "fields": [], "honeypot": None,
                   "languages": [], "store": True, **form}
            with refusals_as_412(f"form {form['_id']}: "):
                await self.events.emit("inbox.form.save", form=doc, identity=identity)
            self.forms.replace(doc)
        return len(forms)

    async def _emit_save(self, form: dict[str, Any], identity: Identity) -> None:
        with refusals_as_412():
            await self.events.emit("inbox.form.save", form=form, identity=identity)


def check_form(data: dict[str, Any]) -> dict[str, Any]:
    errors: dict[str, str] = {}
    clean: dict[str, Any] = {}
    for key, value in data.items():
        if key in READ_ONLY:
            continue
        if key not in FORM_KEYS:
            errors[key] = f"is not a form field (fields: {', '.join(FORM_KEYS)})"
            continue
        problem, value = _check(key, value)
        if problem:
            errors[key] = problem
        else:
            clean[key] = value
    if errors:
        raise ValidationError("form", errors)
    return clean


def _check(key: str, value: Any) -> tuple[str | None, Any]:
    if key == "name":
        ok = isinstance(value, str) and value.strip() != "" and len(value) <= 200
        return (None, value.strip()) if ok else ("must be a non-empty string", value)
    if key == "group":
        return (None, value) if isinstance(value, str) else ("must be a string", value)
    if key == "store":
        return (None, value) if isinstance(value, bool) else ("must be true or false", value)
    if key == "honeypot":
        ok = value is None or (isinstance(value, str) and bool(FIELD_NAME.match(value)))
        return (None, value or None) if ok else ("must be a field name or null", value)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "must be a list of strings", value
    if key == "emails":
        normal = [normal_email(v) for v in value]
        bad = [v for v, n in zip(value, normal, strict=True) if n is None]
        return (f"has invalid addresses: {', '.join(bad)}", value) if bad else (None, normal)
    if key == "domains":
        hosts = [v.strip().lower().rstrip(".") for v in value]
        bad = [v for v, h in zip(value, hosts, strict=True) if not HOST.match(h)]
        return (f"has invalid host names: {', '.join(bad)}", value) if bad else (None, hosts)
    if key == "fields":
        bad = [v for v in value if not FIELD_NAME.match(v)]
        return (f"has invalid field names: {', '.join(bad)}", value) if bad else (None, list(dict.fromkeys(value)))
    # languages
    codes = [v.strip().lower() for v in value]
    unknown = [v for v in codes if v not in language.supported()]
    if unknown:
        return f"has codes the language detector does not know: {', '.join(unknown)} (use ISO 639-1, like en, de)", value
    return None, list(dict.fromkeys(codes))


def _check_bundle_forms(value: Any, checked: Checked) -> list[dict[str, Any]]:
    forms = []
    for form in as_list(value):
        if not isinstance(form, dict) or not is_id(form.get("_id")) or not isinstance(form.get("token"), str):
            raise BadRequest("every form needs an _id and a token")
        clean = check_form(form)
        forms.append({**{k: form[k] for k in ("_id", "token", "_created", "_modified") if k in form}, **clean})
    return forms
