"""Saved views of the studio's lists: a list's columns, filter, sort and
page size kept under a name, for the user who saved it or shared with a
role. One document per view, beside the users' preferences; never in an
export (they are the studio's, not the site's)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qsl, urlencode

from quire.errors import BadRequest, Forbidden, NotFound
from quire.ids import is_id, new_id
from quire.store import Store

VIEWS = "studio_views"
MAX_NAME = 80
MAX_QUERY = 8000
MAX_VIEWS = 50  # per user and model: a menu, not a store
# the list's parameters a view keeps (not the page it was on, nor a search's words)
KEPT = ("sort", "filter", "w", "o", "v", "limit", "cols")


def canonical(pairs: list[tuple[str, str]]) -> str:
    """The query string a view keeps of a list's parameters: those of KEPT
    that are set, and each condition whole (field, operator, value, the
    value empty for "is empty")."""
    names = [v for k, v in pairs if k == "w"]
    ops = [v for k, v in pairs if k == "o"]
    values = [v for k, v in pairs if k == "v"]
    out = [(k, v) for k, v in pairs if k in KEPT and k not in ("w", "o", "v") and v]
    for i, name in enumerate(names):
        if name:
            out += [("w", name), ("o", ops[i] if i < len(ops) else ""), ("v", values[i] if i < len(values) else "")]
    return urlencode(out)


class ViewService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.views = store.collection(VIEWS)

    def visible(self, model: str, user_id: str, role: str) -> list[dict[str, Any]]:
        """The views of `model` a user sees: their own and those shared with
        their role (or with everyone), by name."""
        return self.views.find({"model": model, "$or": [{"owner": user_id}, {"shared": role}, {"shared": "*"}]},
                               [(("name",), 1)])

    async def save(self, model: str, name: str, query: str, shared: str | None, user: dict[str, Any]
                   ) -> dict[str, Any]:
        """A view of the list as its query string holds it; a view of the
        same name of this user is replaced."""
        name = " ".join(name.split())[:MAX_NAME]
        if not name:
            raise BadRequest("A view needs a name", fields=["name"])
        kept = canonical(parse_qsl(query[:MAX_QUERY], keep_blank_values=True))
        async with self.store.atomic():
            same = self.views.find_one({"model": model, "owner": user["_id"], "name": name})
            if same is None and self.views.count({"model": model, "owner": user["_id"]}) >= MAX_VIEWS:
                raise BadRequest(f"You have {MAX_VIEWS} views of this list: delete one first", fields=["name"])
            doc = {"_id": same["_id"] if same else new_id(), "model": model, "name": name,
                   "query": kept, "owner": user["_id"], "owner_name": user.get("name") or user["user"],
                   "shared": shared or None, "_created": int(time.time())}
            self.views.replace(doc) if same else self.views.insert(doc)
        return doc

    async def delete(self, view_id: str, user_id: str, may_manage: bool) -> dict[str, Any]:
        """A view removed by its owner (or, shared, by a manager)."""
        if not is_id(view_id):
            raise NotFound("View not found")
        async with self.store.atomic():
            doc = self.views.get(view_id)
            if doc is None:
                raise NotFound("View not found")
            if doc["owner"] != user_id and not (may_manage and doc.get("shared")):
                raise Forbidden("Only who saved a view (or a manager, for a shared one) may delete it")
            self.views.delete(view_id)
        return doc

    def model_renamed(self, model: str, renames: dict[str, str], **_: Any) -> None:
        """Views follow a model's renamed fields (their columns, sort and
        conditions), in the rename's transaction."""
        for doc in self.views.find({"model": model}):
            pairs = parse_qsl(doc["query"], keep_blank_values=True)
            moved = []
            for key, value in pairs:
                if key in ("w",):
                    value = renames.get(value, value)
                elif key == "sort":
                    value = ("-" if value.startswith("-") else "") + renames.get(value.lstrip("-"), value.lstrip("-"))
                elif key == "cols":
                    value = ",".join(renames.get(c, c) for c in value.split(","))
                moved.append((key, value))
            if moved != pairs:
                self.views.replace({**doc, "query": urlencode(moved)})

    def model_removed(self, model: str, **_: Any) -> None:
        self.views.delete_many({"model": model})
