"""Webhooks: signed HTTP deliveries of the events of writes (content,
assets, pages, forms) to URLs managed in the API and the studio."""

from __future__ import annotations

from typing import Any

from quire.auth.service import Identity
from quire.modules import Module, Services
from quire.webhooks import openapi, routes
from quire.webhooks.sealing import Sealer, key_text
from quire.webhooks.service import MANAGE, WebhookService, who

# Events sent inside their write's transaction: the delivery commits with
# the write. (`inbox.submit.after` comes after its commit: see subscribe.)
IN_TRANSACTION = ("content.item.saved", "content.item.remove", "content.item.publish", "content.item.unpublish",
                  "content.draft.saved", "content.draft.remove",
                  "assets.asset.save", "assets.asset.remove", "pages.page.saved", "pages.page.remove",
                  "pages.settings.saved", "pages.menu.save", "pages.menu.remove", "inbox.submission.save",
                  "inbox.submission.remove", "inbox.form.save", "inbox.form.remove")
EVENTS = (*IN_TRANSACTION, "inbox.submit.after")


def build(services: Services) -> None:
    settings = services.settings.webhooks
    sealer = Sealer(key_text(settings.key, services.settings.data_dir))
    webhooks = services.add("webhooks", WebhookService(services.store, services.cache, settings, services.jobs, sealer,
                                                          events=services.events))
    services.on_close(webhooks.close)


def payload_data(event: str, payload: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The `data` of a delivery for an event's payload, and the content
    model it is about (None for others). Only documents a receiver may see:
    items, pages, assets, menus, submissions; a form without its token."""
    identity = payload.get("identity")
    data: dict[str, Any] = {"by": who(identity) if isinstance(identity, Identity) else None}
    model = payload.get("model") if event.startswith("content.") else None
    if model is not None:
        data["model"] = model
    if "item" in payload:
        data["item"] = payload["item"]
    if event == "content.item.saved":
        data["action"] = "update" if payload.get("previous") is not None else "create"
    for name in ("asset", "page", "settings", "menu"):
        if name in payload:
            data[name] = payload[name]
    if "is_update" in payload and event.startswith("assets."):
        data["action"] = "update" if payload["is_update"] else "create"
    if "record" in payload:
        data["submission"] = payload["record"]
    if isinstance(payload.get("form"), dict):
        form = payload["form"]
        # the token of a form's submit URL is its credential
        data["form"] = {k: v for k, v in form.items() if k != "token"} if event.startswith("inbox.form.") else {
            "_id": form.get("_id"), "name": form.get("name")}
    return data, model if isinstance(model, str) else None


def subscribe(services: Services) -> None:
    """Each event a webhook may follow enqueues its deliveries."""
    webhooks = services.get(WebhookService)

    def follower(event: str) -> Any:
        async def handle(**payload: Any) -> None:
            data, model = payload_data(event, payload)
            await webhooks.on_event(event, data, model)
        return handle

    for event in EVENTS:
        services.events.on(event, follower(event))


module = Module("webhooks", build=build, subscribe=subscribe, routes=routes.routes, openapi=openapi.paths,
                permissions=(MANAGE,))
