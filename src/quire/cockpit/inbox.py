"""Forms and their submissions from Cockpit's Inbox addon, where its data
is present. Cockpit documents where Inbox keeps them (collections
`inbox/forms` and `inbox/submissions`, attachments under
`storage/uploads/inbox/uploads/`) and the shape of a submission, and
Quire's inbox keeps the same shapes: a form keeps its id and token (the
site's form addresses keep working), a submission its id, data, spam flag,
time and attachments (the files copied byte for byte).

Imported submissions are history, not new submissions: they send no
e-mail and no `inbox.submit.*` event (the import's `bundle.import` counts
them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quire.cockpit.folder import CockpitFolder
from quire.cockpit.report import Report
from quire.errors import ApiError
from quire.files import BadKey, check_key
from quire.ids import is_id
from quire.inbox.forms import FORM_KEYS, check_form
from quire.inbox.service import ATTACHMENTS

if TYPE_CHECKING:
    from quire.modules import Services

FORM_DEFAULTS: dict[str, Any] = {"group": "", "emails": [], "domains": [], "fields": [], "honeypot": None,
                                 "languages": [], "store": True}
SUBMISSION_KEYS = {"_id", "form", "data", "attachments", "spam", "_created", "_modified"}


@dataclass
class InboxPlan:
    forms: list[dict[str, Any]] = field(default_factory=list)
    submissions: int = 0
    skipped: set[str] = field(default_factory=set)  # submissions left out


def plan_inbox(folder: CockpitFolder, report: Report) -> InboxPlan:
    plan = InboxPlan()
    for doc in folder.documents("inbox/forms"):
        form = _form(doc, report)
        if form is not None:
            plan.forms.append(form)
    forms = {f["_id"] for f in plan.forms}
    for doc in folder.documents("inbox/submissions"):
        record = submission(doc, forms, folder, report)
        if record is None:
            plan.skipped.add(str(doc.get("_id")))
        else:
            plan.submissions += 1
    return plan


def _form(doc: dict[str, Any], report: Report) -> dict[str, Any] | None:
    name = str(doc.get("name") or doc.get("_id"))
    if not is_id(doc.get("_id")):
        report.note("form", name, "has no 24-hex-digit _id: left out", doc)
        return None
    kept = {k: v for k, v in doc.items() if k in FORM_KEYS and v is not None}
    for key in sorted(set(doc) - set(FORM_KEYS) - {"_id", "token", "_created", "_modified"}):
        if doc[key] not in (None, "", [], {}):
            report.note("form", f"{name} {key}", "not a setting of Quire's forms: left out", doc[key])
    try:
        clean = check_form(kept)
    except ApiError as exc:
        report.note("form", name, f"left out: {exc.message}", doc)
        return None
    token = doc.get("token") if isinstance(doc.get("token"), str) and doc.get("token") else None
    if token is None:
        report.note("form", name, "has no token: it gets a new one, and its submit address changes")
    form = {"_id": doc["_id"], **FORM_DEFAULTS, **clean, "token": token}
    for stamp in ("_created", "_modified"):
        if isinstance(doc.get(stamp), int):
            form[stamp] = doc[stamp]
    return form


def submission(doc: dict[str, Any], forms: set[str], folder: CockpitFolder,
               report: Report | None) -> dict[str, Any] | None:
    """A submission as Quire keeps it, its attachments' files checked to
    be there (None: left out; noted in `report` when given)."""
    where = f"submission {doc.get('_id')}"

    def note(what: str, value: Any = None) -> None:
        if report is not None:
            report.note("submission", where, what, value)

    if not is_id(doc.get("_id")) or doc.get("form") not in forms:
        note("has no id, or its form is not imported: left out", doc)
        return None
    data = doc.get("data")
    if not isinstance(data, dict):
        note("has no data object: left out", doc)
        return None
    record: dict[str, Any] = {"_id": doc["_id"], "form": doc["form"], "data": data, "attachments": {},
                              "spam": doc.get("spam") is True,
                              "_created": doc["_created"] if isinstance(doc.get("_created"), int) else 0}
    attachments = doc.get("attachments")
    for name, items in (attachments.items() if isinstance(attachments, dict) else []):
        for item in items if isinstance(items, list) else []:
            path = _attachment(item, folder)
            if path is None:
                note(f"attachment {name}: its file is missing or outside inbox/uploads: left out", item)
                continue
            record["attachments"].setdefault(name, []).append(
                {"name": str(item.get("name") or Path(item["file"]).name), "file": item["file"].lstrip("/"),
                 "size": path.stat().st_size, "mime": str(item.get("mime") or "application/octet-stream")})
    for key in sorted(set(doc) - SUBMISSION_KEYS):
        if doc[key] not in (None, "", [], {}):
            note(f"its {key!r} is not kept by Quire: left out", doc[key])
    return record


def _attachment(item: Any, folder: CockpitFolder) -> Path | None:
    if not isinstance(item, dict) or not isinstance(item.get("file"), str):
        return None
    key = item["file"].lstrip("/")
    try:
        check_key(key)
    except BadKey:
        return None
    if not key.startswith(ATTACHMENTS + "/"):
        return None
    return folder.upload(key)


def store_form(quire: Services, form: dict[str, Any]) -> None:
    """Inside the caller's transaction."""
    from quire.inbox.forms import new_token

    forms = quire.forms.forms
    doc = {**form, "token": form["token"] or new_token()}
    current = forms.get(form["_id"])
    if current is not None and form["token"] is None:
        doc["token"] = current["token"]  # a second run keeps the token the first one gave
    if current is None:
        forms.insert(doc)
    else:
        forms.replace(doc)


def store_submission(quire: Services, record: dict[str, Any], folder: CockpitFolder) -> None:
    """Its attachments' files, then the record, inside the caller's transaction."""
    uploads = quire.inbox.uploads
    for items in record["attachments"].values():
        for item in items:
            found = folder.upload(item["file"])
            if found is not None:
                uploads.put(item["file"], found.read_bytes())
    submissions = quire.submissions.submissions
    if submissions.get(record["_id"]) is None:
        submissions.insert(record)
    else:
        submissions.replace(record)
