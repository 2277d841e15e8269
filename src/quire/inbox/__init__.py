"""Forms (`inbox`): public submissions by form token, with attachments,
spam defences, events and notification e-mail."""

from __future__ import annotations

from pathlib import Path

from quire.assets.service import AssetService
from quire.bundleparts import BundlePart
from quire.catalogue import AFTER, BEFORE, spec
from quire.inbox import openapi, routes, screens
from quire.inbox.forms import FormService
from quire.inbox.mailer import Mailer
from quire.inbox.reads import ReadState
from quire.inbox.service import SubmitService
from quire.inbox.submissions import SubmissionService
from quire.jobs import Jobs
from quire.modules import Module, NavEntry, Services
from quire.ratelimit import RateLimiter


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


module = Module("inbox", events=SENT, build=build, bundle=bundle, openapi=openapi.paths,
                routes=[*routes.routes, *screens.routes], templates=HERE / "templates", static=HERE / "static",
                nav=[NavEntry("Forms", "/studio/forms", "Content", screens.may_read, badge=screens.unread_badge,
                              order=40)],
                permissions=("inbox/manage", "inbox/submissions"))
