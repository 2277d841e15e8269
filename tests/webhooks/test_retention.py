"""The delivery log's retention: a daily job (one per cluster, keyed by the
day) drops attempts older than `keep_days`; deleting a webhook drops its
log; redelivering needs an enabled webhook."""

from __future__ import annotations

import time
from typing import Any

from quire.app import Quire
from quire.ids import new_id
from quire.webhooks.service import DELIVERIES, PRUNE, WebhookService
from tests.conftest import Api

GOOD = {"name": "Build", "url": "https://build.example/hooks", "events": ["none.such"]}


def _attempt(hook_id: str, age_days: float) -> dict[str, Any]:
    return {"_id": new_id(), "hook": hook_id, "msg": f"msg_{new_id()}", "event": "content.item.saved", "job": "j",
            "attempt": 1, "status": 200, "ok": True, "ms": 3, "error": None, "at": time.time() - age_days * 86_400,
            "manual": False, "body": "{}"}


def test_the_daily_prune_drops_attempts_older_than_keep_days(admin: Api, quire: Quire) -> None:
    hook = admin.post("/api/webhooks", json=GOOD).json()
    log = quire.store.collection(DELIVERIES)
    with quire.store.transaction():
        for age in (0, 29, 31, 400):
            log.insert(_attempt(hook["_id"], age))
    webhooks = quire.get(WebhookService)
    assert webhooks.prune() == 2
    assert admin.get(f"/api/webhooks/{hook['_id']}/deliveries").json()["total"] == 2
    webhooks.schedule()
    webhooks.schedule()  # any number of instances: one job per day
    day = int(time.time() // 86_400)
    assert quire.store.collection("system/jobs").count({"kind": PRUNE, "key": str(day)}) == 1


def test_deleting_a_webhook_drops_its_log_and_a_disabled_one_is_not_redelivered_to(admin: Api, quire: Quire) -> None:
    hook = admin.post("/api/webhooks", json=GOOD).json()
    other = admin.post("/api/webhooks", json={**GOOD, "name": "Other"}).json()
    entry = _attempt(hook["_id"], 0)
    with quire.store.transaction():
        quire.store.collection(DELIVERIES).insert(entry)
        quire.store.collection(DELIVERIES).insert(_attempt(other["_id"], 0))
    admin.put(f"/api/webhooks/{hook['_id']}", json={"enabled": False})
    refused = admin.post(f"/api/webhooks/{hook['_id']}/deliveries/{entry['_id']}/redeliver")
    assert refused.status_code == 400 and "enable it first" in refused.json()["error"]
    wrong_hook = admin.post(f"/api/webhooks/{other['_id']}/deliveries/{entry['_id']}/redeliver")
    assert wrong_hook.status_code == 404
    assert admin.delete(f"/api/webhooks/{hook['_id']}").status_code == 200
    assert quire.store.collection(DELIVERIES).count({"hook": hook["_id"]}) == 0
    assert quire.store.collection(DELIVERIES).count({"hook": other["_id"]}) == 1


def test_a_secret_sealed_with_another_key_is_not_sent_and_says_why(admin: Api, quire: Quire) -> None:
    from quire.webhooks.sealing import Sealer

    admin.put("/api/system/models/posts", json={"name": "posts", "type": "collection",
                                                "fields": [{"name": "title", "type": "text"}]})
    hook = admin.post("/api/webhooks", json={**GOOD, "events": ["*"]}).json()
    stored = quire.store.collection("system/webhooks").get(hook["_id"])
    assert stored is not None
    stored["secret"] = Sealer("another instance's key, 32 characters or more").seal("whsec_AAAA")
    with quire.store.transaction():
        quire.store.collection("system/webhooks").replace(stored)
    admin.post("/api/content/item/posts", json={"data": {"title": "x"}})
    deadline = time.monotonic() + 30
    while not (log := admin.get(f"/api/webhooks/{hook['_id']}/deliveries").json()["data"]):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert "cannot be decrypted" in log[0]["error"] and log[0]["status"] is None
