"""Forms (`inbox`): public submissions by form token, with attachments,
spam defences, events and notification e-mail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.assets.service import AssetService
from quire.bundleparts import BundlePart
from quire.catalogue import AFTER, BEFORE, spec
from quire.inbox import openapi, routes, screens
from quire.inbox.forms import FormService, check_form
from quire.inbox.mailer import Mailer
from quire.inbox.reads import ReadState
from quire.inbox.service import SubmitService
from quire.inbox.submissions import SubmissionService
from quire.jobs import Jobs
from quire.modules import Module, NavEntry, Services
from quire.ratelimit import RateLimiter
from quire.schemaparts import Effect, SchemaPart, without


def build(services: Services) -> None:
    settings, store, events = services.settings, services.store, services.events
    uploads = services.get(AssetService).uploads
    # e-mail goes out as jobs: the app's runner starts and stops with the server
    mailer = services.add("mailer", Mailer(settings.smtp, uploads, services.get(Jobs)))
    forms = services.add("forms", FormService(store, events))
    services.add("inbox", SubmitService(store, events, mailer, uploads, settings.inbox, settings.assets))
    reads = services.add("inbox_reads", ReadState(store, services.cache))
    services.add("submissions", SubmissionService(store, services.cache, events, forms, uploads, reads))
    inbox = settings.inbox
    services.add("rate_limiter", RateLimiter(store, inbox.rate_limit, inbox.rate_window_seconds))


def bundle(services: Services) -> list[BundlePart]:
    return [services.get(FormService).bundle_part()]


def schema(services: Services) -> list[SchemaPart]:
    """Forms in schema snapshots, by name, without their ids and tokens
    (each environment's form addresses are its own). Removing one removes
    its submissions."""
    forms, submissions = services.get(FormService), services.get(SubmissionService)

    def entries() -> list[dict[str, Any]]:
        return [without(f, "_id", "token", "_created", "_modified") for f in forms.forms.find(None, [(("name",), 1)])]

    def effect(current: dict[str, Any] | None, wanted: dict[str, Any] | None) -> Effect:
        if wanted is not None or current is None:
            return Effect()
        found = forms.by_name(str(current["name"]))
        count = submissions.total(found["_id"]) if found else 0
        return Effect(count, f"its {count} submissions" if count else None)

    async def apply(current: dict[str, Any] | None, wanted: dict[str, Any] | None, identity: Any) -> None:
        found = forms.by_name(str((wanted or current or {}).get("name")))
        if wanted is None:
            if found is not None:
                await submissions.delete_form(found["_id"], identity)
            return
        await forms.save({**wanted, **({"_id": found["_id"]} if found else {})}, identity)

    return [SchemaPart("forms", entries, effect, apply, check=check_form)]


HERE = Path(__file__).parent

# the events it sends (catalogue.py; docs/hooks.md describes each)
SENT = [
    spec("inbox.submission.save", BEFORE, "record", "identity", delivered=True,
         resource="inbox/submissions", subject="record", audit="submission.update"),
    spec("inbox.submission.remove", BEFORE, "record", "identity", delivered=True,
         resource="inbox/submissions", subject="record", audit="submission.delete"),
    spec("inbox.form.save", BEFORE, "form", "identity", delivered=True,
         resource="inbox/forms", subject="form", audit="form.save"),
    spec("inbox.form.remove", BEFORE, "form", "identity", delivered=True,
         resource="inbox/forms", subject="form", audit="form.delete"),
    spec("inbox.submit.before", BEFORE, "form", "record"),
    spec("inbox.submit.after", AFTER, "form", "record", delivered=True),
]


module = Module("inbox", events=SENT, build=build, bundle=bundle, schema=schema, openapi=openapi.paths,
                routes=[*routes.routes, *screens.routes], templates=HERE / "templates", static=HERE / "static",
                nav=[NavEntry("Forms", "/studio/forms", "Content", screens.may_read, badge=screens.unread_badge,
                              order=40)],
                permissions=("inbox/manage", "inbox/submissions"))
