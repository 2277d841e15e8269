"""An import checks items as an API write does, with the same messages,
and stores nothing when one of them fails."""

from __future__ import annotations

from typing import Any

import pytest

from quire.bundle import import_bundle
from quire.errors import ApiError
from quire.events import Events
from tests.conftest import Api, put_model

POSTS = {"name": "posts", "type": "collection",
         "fields": [{"name": "title", "type": "text", "required": True}, {"name": "body", "type": "text"}]}
NAV = {"name": "nav", "type": "tree", "fields": [{"name": "label", "type": "text"}]}


def ident(n: int) -> str:
    return f"{n:024x}"


def bundle(models: list[dict[str, Any]], items: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"quire": 1, "models": models, "locales": [{"i18n": "de", "name": "Deutsch"}], "items": items}


@pytest.mark.anyio
async def test_an_item_missing_a_required_field_is_refused_like_an_api_write(admin: Api, quire: Any) -> None:
    put_model(admin, "posts", **{k: v for k, v in POSTS.items() if k != "name"})
    api = admin.post("/api/content/item/posts", json={"data": {"body": "no title"}})
    assert api.status_code == 400
    quire.models.delete("posts")  # the import brings the model itself

    items = [{"_id": ident(1), "title": "fine", "body": "x"}, {"_id": ident(2), "body": "no title"}]
    with pytest.raises(ApiError) as refused:
        await import_bundle(quire, bundle([POSTS], {"posts": items}))
    assert refused.value.status == api.status_code
    assert refused.value.message == f"posts/{ident(2)}: " + api.json()["error"]
    assert quire.models.find("posts") is None  # nothing stored: no model, no locale, no item
    assert quire.locales.codes() == []
    assert not quire.store.table_exists("content/posts")


@pytest.mark.anyio
async def test_a_required_field_of_a_stored_model_is_checked_too(admin: Api, quire: Any) -> None:
    put_model(admin, "posts", **{k: v for k, v in POSTS.items() if k != "name"})
    with pytest.raises(ApiError) as refused:
        await import_bundle(quire, {"quire": 1, "items": {"posts": [{"_id": ident(3), "title": ""}]}})
    assert refused.value.message == f"posts/{ident(3)}: Invalid item data: title is required"
    assert quire.store.collection("content/posts").count() == 0


@pytest.mark.anyio
async def test_a_tree_item_needs_a_parent_of_the_bundle_or_the_store(admin: Api, quire: Any) -> None:
    put_model(admin, "nav", **{k: v for k, v in NAV.items() if k != "name"})
    api = admin.post("/api/content/item/nav", json={"data": {"label": "lost", "_pid": ident(9)}})
    assert api.status_code == 400
    orphan = [{"_id": ident(1), "label": "lost", "_pid": ident(9)}]
    with pytest.raises(ApiError) as refused:
        await import_bundle(quire, bundle([NAV], {"nav": orphan}))
    assert refused.value.message == f"nav/{ident(1)}: " + api.json()["error"]
    loop = [{"_id": ident(1), "_pid": ident(2)}, {"_id": ident(2), "_pid": ident(1)}]
    with pytest.raises(ApiError) as refused:
        await import_bundle(quire, bundle([NAV], {"nav": loop}))
    assert refused.value.message == f"nav/{ident(1)}: Invalid item data: _pid would make the item its own ancestor"
    assert quire.store.collection("content/nav").count() == 0
    # a child may come before its parent in the bundle; a stored parent counts too
    await import_bundle(quire, bundle([NAV], {"nav": [{"_id": ident(2), "_pid": ident(1)}, {"_id": ident(1)}]}))
    await import_bundle(quire, bundle([NAV], {"nav": [{"_id": ident(3), "_pid": ident(2)}]}))
    assert quire.store.collection("content/nav").count() == 3


@pytest.mark.anyio
async def test_an_imported_form_is_stored_through_its_service(quire: Any, events: Events) -> None:
    seen: list[dict[str, Any]] = []
    events.on("inbox.form.save", lambda form, **_: seen.append(dict(form)))
    form = {"_id": ident(5), "token": "t" * 32, "name": "Contact"}
    counts = await import_bundle(quire, {"quire": 1, "forms": [form]})
    assert counts["forms"] == 1
    assert seen[0]["emails"] == [] and seen[0]["name"] == "Contact"  # the complete form, as from the API
    assert quire.forms.by_name("Contact")["token"] == "t" * 32
