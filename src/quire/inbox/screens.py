"""The forms inbox: forms and their settings (`inbox/manage`), and the
submissions each form received (`inbox/submissions` or `inbox/manage`),
read and unread per user, with the spam flag, downloads of their files,
search, CSV export and delete. Every change goes through the inbox
module's services, as the API's do; read state lives in its ReadState."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from quire.asgi import route
from quire.auth.service import Identity
from quire.errors import BadRequest, Forbidden, NotFound, ValidationError
from quire.http import quire_of, service
from quire.inbox.forms import FormService
from quire.inbox.reads import ReadState
from quire.inbox.routes import attachment_response
from quire.inbox.submissions import SubmissionService
from quire.modules import Services
from quire.ui.screens import Form, checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login

MANAGE = "inbox/manage"
READ = "inbox/submissions"
PER_PAGE = 25
MAX_WORDS = 200  # characters of the search box that count
MAX_PAGE = 1_000_000
TEXT_FIELDS = ("name", "group", "honeypot")
LIST_FIELDS = ("emails", "domains", "fields", "languages")
SPLIT = re.compile(r"[\s,;]+")


def may_read(identity: Identity) -> bool:
    return bool(identity.can(READ) or identity.can(MANAGE))


def unread_badge(services: Services, login: Login) -> int:
    """The sidebar's count: submissions (not spam) this user has not opened."""
    try:
        reads = services.get(ReadState)
    except LookupError:  # an app built without the inbox module
        return 0
    return reads.unread(str(login.user["_id"]))


def _need_read(login: Login) -> None:
    if not may_read(login.identity):
        raise Forbidden(f"Your role does not allow this ({READ}).")


def _reader(login: Login) -> Identity:
    """The identity the submission services check: the studio lets form
    managers read their forms' submissions too, so theirs gains READ."""
    _need_read(login)
    identity = login.identity
    return identity if identity.can(READ) else replace(identity, permissions=identity.permissions | {READ})


def when(seconds: Any) -> str:
    """A submission's time, in UTC (the server does not know the reader's zone)."""
    try:
        return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError, OverflowError, OSError):
        return ""


def _user(login: Login) -> str:
    return str(login.user["_id"])


def _form(request: Request) -> dict[str, Any]:
    return service(request, FormService).by_id(request.path_params["id"])


# -- forms ---------------------------------------------------------------------


@studio_page
async def forms_list(request: Request, login: Login) -> Response:
    forms = service(request, FormService).listed(_reader(login))
    reads = service(request, ReadState)
    user = _user(login)
    submissions = service(request, SubmissionService)
    rows = [{"form": f, "unread": reads.unread(user, f["_id"]),
             "total": submissions.total(f["_id"])} for f in forms]
    return render(request, login, "inbox/inbox_forms.html", rows=rows, manage=login.can(MANAGE), when=when)


def _values(form: dict[str, Any] | None) -> dict[str, str]:
    """A form's settings as the editor's inputs show them."""
    form = form or {}
    values = {k: str(form.get(k) or "") for k in TEXT_FIELDS}
    values.update({k: "\n".join(form.get(k) or []) for k in LIST_FIELDS})
    values["store"] = "yes" if form.get("store", True) else ""
    return values


def _data_of(posted: Form) -> tuple[dict[str, Any], dict[str, str]]:
    values = {k: posted.get(k) for k in TEXT_FIELDS + LIST_FIELDS}
    values["store"] = "yes" if posted.get("store") else ""
    data: dict[str, Any] = {"name": values["name"], "group": values["group"].strip(),
                            "honeypot": values["honeypot"].strip() or None, "store": bool(values["store"])}
    for key in LIST_FIELDS:
        data[key] = [v for v in SPLIT.split(values[key]) if v]
    return data, values


def _editor(request: Request, login: Login, form: dict[str, Any] | None, values: dict[str, str],
            errors: dict[str, str] | None = None, message: str | None = None, status: int = 200) -> Response:
    token = form.get("token") if form else None
    base = quire_of(request).public_url.rstrip("/") or str(request.base_url).rstrip("/")
    submit_url = f"{base}/api/inbox/submit/{token}" if token else ""
    return render(request, login, "inbox/inbox_form.html", status, form=form, values=values, errors=errors or {},
                  message=message, submit_url=submit_url)


@studio_page
async def new_form_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return _editor(request, login, None, _values(None))


@studio_page
async def create_form(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return await _save(request, login, await checked_form(request, login), None)


@studio_page
async def form_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    form = _form(request)
    return _editor(request, login, form, _values(form))


@studio_page
async def save_form(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    posted = await checked_form(request, login)
    return await _save(request, login, posted, _form(request))


async def _save(request: Request, login: Login, posted: Form, form: dict[str, Any] | None) -> Response:
    data, values = _data_of(posted)
    if form is not None:
        data["_id"] = form["_id"]
    try:
        saved = await service(request, FormService).save(data, login.identity)
    except ValidationError as exc:
        return _editor(request, login, form, values, exc.errors, exc.message, 400)
    except BadRequest as exc:
        return _editor(request, login, form, values, {}, exc.message, 400)
    return redirect_flash(request, f"/studio/forms/{saved['_id']}", f"Saved the form {saved['name']}.")


@studio_page
async def token_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return render(request, login, "inbox/inbox_confirm.html", form=_form(request), action="token")


@studio_page
async def rotate_token(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    await checked_form(request, login)
    form = await service(request, FormService).rotate_token(_form(request)["_id"], login.identity)
    return redirect_flash(request, f"/studio/forms/{form['_id']}",
                          "The form has a new token: the old submit URL no longer works.")


@studio_page
async def delete_form_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    form = _form(request)
    submissions = service(request, SubmissionService)
    total = submissions.total(form["_id"])
    return render(request, login, "inbox/inbox_confirm.html", form=form, action="delete-form", total=total)


@studio_page
async def delete_form(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    await checked_form(request, login)
    form = _form(request)
    await service(request, SubmissionService).delete_form(form["_id"], login.identity)
    return redirect_flash(request, "/studio/forms", f"Deleted the form {form['name']} and its submissions.")


# -- submissions ---------------------------------------------------------------


def _words(request: Request) -> str:
    return " ".join(request.query_params.get("q", "").replace("\x00", "").split())[:MAX_WORDS]


def _page_number(request: Request) -> int:
    text = request.query_params.get("page", "1")
    # at most 9 digits: int() of thousands of digits is refused by Python itself
    if not (text.isascii() and text.isdigit() and len(text) <= 9) or not 1 <= int(text) <= MAX_PAGE:
        raise BadRequest("page must be a whole number from 1")
    return int(text)


@studio_page
async def submissions_page(request: Request, login: Login) -> Response:
    identity = _reader(login)
    form = _form(request)
    words, page = _words(request), _page_number(request)
    submissions = service(request, SubmissionService)
    docs, total = submissions.page(form, words, PER_PAGE, (page - 1) * PER_PAGE, identity)
    read = service(request, ReadState).read_ids(_user(login), [d["_id"] for d in docs])
    columns = list(form.get("fields") or [])[:3] or list(dict.fromkeys(k for d in docs for k in d["data"]))[:3]
    pages = max(1, -(-total // PER_PAGE))
    query = {"q": words} if words else {}
    return render(request, login, "inbox/inbox_submissions.html", form=form, docs=docs, total=total, read=read,
                  columns=columns, page=page, pages=pages, words=words, first=(page - 1) * PER_PAGE + 1,
                  unread=service(request, ReadState).unread(_user(login), form["_id"]),
                  prev_url=_url(form, query, page - 1) if page > 1 else None,
                  next_url=_url(form, query, page + 1) if page < pages else None,
                  csv_url=f"/studio/forms/{form['_id']}/submissions.csv" + (f"?{urlencode(query)}" if query else ""),
                  manage=login.can(MANAGE), when=when)


def _url(form: dict[str, Any], query: dict[str, str], page: int) -> str:
    return f"/studio/forms/{form['_id']}/submissions?" + urlencode({**query, "page": page})


def _record(request: Request, form: dict[str, Any], identity: Any) -> dict[str, Any]:
    record = service(request, SubmissionService).get(request.path_params["sid"], identity)
    if record.get("form") != form["_id"]:
        raise NotFound("Submission not found")
    return record


@studio_page
async def submission_page(request: Request, login: Login) -> Response:
    identity = _reader(login)
    form = _form(request)
    record = _record(request, form, identity)
    await service(request, ReadState).mark(_user(login), record)  # opening it reads it, for this user only
    files = [(field, n, item) for field, items in record.get("attachments", {}).items()
             for n, item in enumerate(items)]
    return render(request, login, "inbox/inbox_submission.html", form=form, record=record, files=files,
                  back=f"/studio/forms/{form['_id']}/submissions", when=when)


@studio_page
async def set_spam(request: Request, login: Login) -> Response:
    identity = _reader(login)
    posted = await checked_form(request, login)
    form = _form(request)
    record = _record(request, form, identity)
    spam = posted.get("spam") == "yes"
    await service(request, SubmissionService).update(record["_id"], {"spam": spam}, identity)
    return redirect_flash(request, f"/studio/forms/{form['_id']}/submissions/{record['_id']}",
                          "Marked as spam." if spam else "Marked as not spam.")


@studio_page
async def mark_unread(request: Request, login: Login) -> Response:
    identity = _reader(login)
    await checked_form(request, login)
    form = _form(request)
    record = _record(request, form, identity)
    await service(request, ReadState).mark(_user(login), record, read=False)
    return redirect_flash(request, f"/studio/forms/{form['_id']}/submissions", "Marked as unread.")


@studio_page
async def delete_submission_page(request: Request, login: Login) -> Response:
    identity = _reader(login)
    form = _form(request)
    record = _record(request, form, identity)
    return render(request, login, "inbox/inbox_confirm.html", form=form, record=record, action="delete-submission")


@studio_page
async def delete_submission(request: Request, login: Login) -> Response:
    identity = _reader(login)
    await checked_form(request, login)
    form = _form(request)
    record = _record(request, form, identity)
    await service(request, SubmissionService).delete(record["_id"], identity)
    return redirect_flash(request, f"/studio/forms/{form['_id']}/submissions", "Deleted the submission.")


@studio_page
async def download(request: Request, login: Login) -> Response:
    identity = _reader(login)
    form = _form(request)
    record = _record(request, form, identity)
    p = request.path_params
    submissions = service(request, SubmissionService)
    found, item = await submissions.attachment(record["_id"], p["field"], p["n"], identity)
    return attachment_response(request, submissions.uploads, found, item)


@studio_page
async def export_csv(request: Request, login: Login) -> Response:
    identity = _reader(login)
    form = _form(request)
    submissions = service(request, SubmissionService)
    rows = submissions.export_csv(form["_id"], submissions.search_spec(form, _words(request)), identity)
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", form["name"]).strip("-")[:60] or "form"
    return StreamingResponse(rows, media_type="text/csv; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="submissions-{name}.csv"',
        "Cache-Control": "private, no-store", "X-Content-Type-Options": "nosniff"})


BASE = "/studio/forms/{id}"
routes = [
    route("/studio/forms", get=forms_list, cors=False),
    route("/studio/forms/new", get=new_form_page, post=create_form, cors=False),
    route(BASE, get=form_page, post=save_form, cors=False),
    route(BASE + "/token", get=token_page, post=rotate_token, cors=False),
    route(BASE + "/delete", get=delete_form_page, post=delete_form, cors=False),
    route(BASE + "/submissions", get=submissions_page, cors=False),
    route(BASE + "/submissions.csv", get=export_csv, cors=False),
    route(BASE + "/submissions/{sid}", get=submission_page, cors=False),
    route(BASE + "/submissions/{sid}/spam", post=set_spam, cors=False),
    route(BASE + "/submissions/{sid}/unread", post=mark_unread, cors=False),
    route(BASE + "/submissions/{sid}/delete", get=delete_submission_page, post=delete_submission, cors=False),
    route(BASE + "/submissions/{sid}/files/{field}/{n}", get=download, cors=False),
]
