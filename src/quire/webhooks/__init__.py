"""Webhooks: signed HTTP deliveries of the events of writes (content,
assets, pages, forms) to URLs managed in the API and the studio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.auth.service import Identity
from quire.catalogue import INSIDE, REMOVE, WRITE, Audit, changed, spec, text
from quire.modules import Module, NavEntry, Services
from quire.webhooks import openapi, routes, screens
from quire.webhooks.sealing import Sealer, key_text
from quire.webhooks.service import MANAGE, WebhookService, delivered, who


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

    for event in delivered(services.catalogue):  # every event the modules declare as delivered
        services.events.on(event, follower(event))


HERE = Path(__file__).parent

# the events it sends (catalogue.py; docs/hooks.md describes each)
def _named(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    """Its name (and, for a change, which fields changed): never its URL or
    headers, which may carry a receiver's credentials."""
    webhook, previous = payload["webhook"], payload.get("previous")
    if previous is None:
        return {"name": text(webhook["name"])}
    return {"name": text(webhook["name"]), "fields": [f for f in changed(previous, webhook) if f != "modified"]}


def _name(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    return {"name": text(payload["webhook"]["name"])}


SENT = [
    spec("webhooks.webhook.save", INSIDE, "webhook", "previous", "identity",
         resource="webhooks", subject="webhook", change=WRITE, audit=Audit("webhook.*", _named)),
    spec("webhooks.webhook.rotate", INSIDE, "webhook", "previous", "identity",
         resource="webhooks", subject="webhook", audit=Audit("webhook.rotate", _name)),
    spec("webhooks.webhook.remove", INSIDE, "webhook", "previous", "identity",
         resource="webhooks", subject="webhook", change=REMOVE, audit=Audit("webhook.delete", _name)),
]


module = Module("webhooks", events=SENT, build=build, subscribe=subscribe, openapi=openapi.paths, notices=screens.notices,
                routes=[*routes.routes, *screens.routes], templates=HERE / "templates",
                nav=[NavEntry("Webhooks", "/studio/settings/webhooks", "Settings",
                              lambda identity: identity.can("webhooks/manage"), order=85)],
                permissions=(MANAGE,), schema=lambda services: [services.get(WebhookService).schema_part()])
