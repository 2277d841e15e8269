"""The audit log in the studio (`audit/read`): a table of entries, newest
first, filtered by a GET form (action, who, resource, a range of days in
UTC) and paged by "Newer"/"Older" links. A page reads one more entry than
it shows to know whether an older page exists: counting every match of a
broad filter over a long log costs more than the page itself.

Where an entry names a document that still exists (an item, a page, a
model, a role, a user), the resource links to it; the existence checks are one
query per model on the page, through the owning services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.audit.routes import READ
from quire.audit.service import AuditQuery, AuditService, filter_text
from quire.auth.service import AuthService
from quire.auth.users import UserService
from quire.content.models import ModelService
from quire.content.service import ContentService
from quire.errors import BadRequest
from quire.http import service
from quire.pages.service import PagesService
from quire.ui import zones
from quire.ui.screens import need, render, studio_page
from quire.ui.web import Login

PAGE_SIZE = 50
MAX_PAGE = 2_000  # 100,000 entries back; narrow the dates to go further
BASE = "/studio/settings/audit"


@dataclass
class Filters:
    """The form's values as typed (shown back in the form) and as a query."""

    action: str = ""
    who: str = ""
    resource: str = ""
    start: str = ""  # YYYY-MM-DD, a day in the user's time zone
    end: str = ""
    page: int = 1
    zone: str = "UTC"

    def query(self) -> AuditQuery:
        return AuditQuery(action=filter_text("action", self.action), who=filter_text("who", self.who),
                          resource=filter_text("resource", self.resource),
                          start=_day("from", self.start, self.zone), end=_day("to", self.end, self.zone, last=True))

    def link(self, page: int) -> str:
        params = {k: v for k, v in (("action", self.action), ("who", self.who), ("resource", self.resource),
                                    ("from", self.start), ("to", self.end)) if v}
        if page > 1:
            params["page"] = str(page)
        return BASE + ("?" + urlencode(params) if params else "")


def _day(name: str, text: str, zone: str, last: bool = False) -> float | None:
    """A date of the form (YYYY-MM-DD) as Unix seconds at its start in the
    user's time zone (its end, for "to")."""
    if not text:
        return None
    try:
        first, end = zones.day_bounds(text, zone) if len(text) == 10 else (None, None)
    except ValueError:
        first = end = None
    if first is None or end is None:
        raise BadRequest(f"{name} must be a date like 2026-11-26", fields=[name])
    return end + 1 - 0.001 if last else float(first)


def _printable(text: str) -> str:
    """What was typed, shown back without control characters or lone surrogates."""
    return "".join(c for c in text if ord(c) >= 32 and not 0xD800 <= ord(c) <= 0xDFFF)


def _filters(request: Request, zone: str) -> Filters:
    params = request.query_params
    raw_page = params.get("page", "1")
    if not (raw_page.isascii() and raw_page.isdigit()) or not 1 <= int(raw_page[:6]) <= MAX_PAGE:
        raise BadRequest(f"page must be a number from 1 to {MAX_PAGE}: narrow the dates to look further back",
                         fields=["page"])
    return Filters(params.get("action", "").strip(), params.get("who", "").strip(),
                   params.get("resource", "").strip(), params.get("from", "").strip(), params.get("to", "").strip(),
                   int(raw_page), zone)


@studio_page
async def audit_page(request: Request, login: Login) -> Response:
    need(login, READ)
    try:
        filters = _filters(request, zones.zone_name(request, login.user["_id"]))
        query = filters.query()
    except BadRequest as exc:
        typed = {k: _printable(request.query_params.get(k, "")[:200]) for k in ("action", "who", "resource", "from", "to")}
        shown = Filters(typed["action"], typed["who"], typed["resource"], typed["from"], typed["to"])
        named = exc.extra.get("fields") or [""]
        return render(request, login, "audit/settings_audit.html", 400, f=shown, entries=[], more=False,
                      error=exc.message, field=named[0])
    entries, more = service(request, AuditService).page(query, PAGE_SIZE, (filters.page - 1) * PAGE_SIZE)
    _link_existing(request, entries)
    return render(request, login, "audit/settings_audit.html", f=filters, entries=entries, more=more,
                  error=None, field="")


def _link_existing(request: Request, entries: list[dict[str, Any]]) -> None:
    """Set `link` on entries whose document still exists: content items
    (one query per model), pages, models and roles."""
    content, models = service(request, ContentService), service(request, ModelService)
    by_model: dict[str, set[str]] = {}
    page_ids: set[str] = set()
    for entry in entries:
        resource, item = entry["resource"], entry.get("id")
        if not isinstance(item, str):
            continue
        if resource.startswith("content/"):
            by_model.setdefault(resource[8:], set()).add(item)
        elif resource == "pages":
            page_ids.add(item)
    existing: dict[str, set[str]] = {}
    for name, ids in by_model.items():
        model = models.find(name)
        existing[name] = set(content.collection(model).get_many(sorted(ids))) if model is not None else set()
    pages = service(request, PagesService).exists(sorted(page_ids)) if page_ids else set()
    auth, users = service(request, AuthService), service(request, UserService)
    for entry in entries:
        resource, item = entry["resource"], entry.get("id")
        link = None
        if resource.startswith("content/") and item in existing.get(resource[8:], ()):
            link = f"/studio/content/{resource[8:]}/item/{item}"
        elif resource == "pages" and item in pages:
            link = f"/studio/pages/{item}"
        elif resource == "models" and isinstance(item, str) and models.find(item) is not None:
            link = f"/studio/models/{item}"
        elif resource == "roles" and isinstance(item, str) and auth.role_exists(item):
            link = f"/studio/settings/roles/{item}"
        elif resource == "users" and isinstance(item, str) and users.get(item) is not None:
            link = "/admin/users"
        entry["link"] = link
        entry["detail_text"] = detail_text(entry.get("detail") or {})


def detail_text(detail: dict[str, Any]) -> str:
    """A detail as one short line: `fields: title, body; role: editor`."""
    parts = []
    for key, value in detail.items():
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, dict):
            value = ", ".join(f"{k} → {v}" if key == "renamed" else f"{k}: {v}" for k, v in value.items())
        elif isinstance(value, bool):
            value = "yes" if value else "no"
        if value != "":
            parts.append(f"{key}: {value}")
    return "; ".join(parts)[:300]


routes = [route(BASE, get=audit_page, cors=False)]
