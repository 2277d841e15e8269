"""What the studio remembers per user: the columns chosen for each model's
list. One document per user, beside the users (not in them: preferences
are not account data and never leave in an export)."""

from __future__ import annotations

from typing import Any

from quire.store import Store

PREFS = "studio_prefs"


def columns_key(model: str) -> str:
    """Where a user's chosen columns of a model's list are kept."""
    return f"columns/{model}"


class PrefsService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.prefs = store.collection(PREFS)

    def get(self, user_id: str, key: str, default: Any = None) -> Any:
        doc = self.prefs.get(user_id)
        return doc.get("values", {}).get(key, default) if doc else default

    def model_renamed(self, model: str, renames: dict[str, str], **_: Any) -> None:
        """The columns users chose for a model follow its renamed fields, in
        the rename's transaction (one document per user: a short scan)."""
        key = columns_key(model)
        for doc in self.prefs.find():
            columns = doc.get("values", {}).get(key)
            if isinstance(columns, list) and any(c in renames for c in columns):
                doc["values"][key] = [renames.get(c, c) for c in columns]
                self.prefs.replace(doc)

    async def aset(self, user_id: str, key: str, value: Any) -> None:
        async with self.store.atomic():
            doc = self.prefs.get(user_id) or {"_id": user_id, "values": {}}
            doc["values"][key] = value
            self.prefs.replace(doc)
