"""Webhooks: managed documents of `system/webhooks`, deliveries as jobs.

An event of a write that a webhook follows becomes a job of kind
`webhook.delivery`, enqueued inside the write's transaction (so a delivery
exists exactly when the write does) with the whole message body and its
`webhook-id` fixed at enqueue: every attempt sends the same bytes and id,
signed afresh with the attempt's time. The jobs runner sends it; each
attempt is recorded in `system/webhook_deliveries` in a transaction that
first checks the job's claim still holds, so an attempt is recorded once
even when a runner stalls past its lease or dies. See docs/webhooks.md."""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson

from quire import requestid, tracing
from quire.auth.service import SYSTEM, Identity
from quire.cache import Cache, bump_system_version
from quire.catalogue import EventSpec
from quire.config import WebhooksSettings
from quire.counting import tell
from quire.errors import BadRequest, NotFound
from quire.events import Events, refusals_as_412
from quire.ids import is_id, new_id
from quire.jobs import (
    DAY,
    OUTCOME_WAIT,
    WEBHOOKS_LANE,
    Daily,
    GiveUp,
    Job,
    Jobs,
    drop_older,
)
from quire.schemaparts import Effect, SchemaPart
from quire.store import Store
from quire.webhooks.checks import check_webhook, matches
from quire.webhooks.deliver import MAX_LOGGED, Policy, Refused, Sender
from quire.webhooks.sealing import Sealer, new_secret, sign

log = logging.getLogger("quire.webhooks")

WEBHOOKS = "system/webhooks"
DELIVERIES = "system/webhook_deliveries"
DELIVERY_HINTS = {"hook": "text", "at": "number"}
DELIVERY_INDEXES: list[list[tuple[str, ...]]] = [[("hook",), ("at",)], [("at",)]]
DELIVERY = "webhook.delivery"
# Deliveries a runner claims and records in one transaction each (see
# `Jobs.handle`): a save beside its delivery then costs the store a little
# more than one write transaction, not two or three.
def delivered(catalogue: dict[str, EventSpec]) -> list[str]:
    """The events a webhook may follow: those the catalogue marks as
    delivered, content's first (the order of the studio's boxes)."""
    names = [e.name for e in catalogue.values() if e.delivered]
    return [n for n in names if n.startswith("content.")] + [n for n in names if not n.startswith("content.")]


DELIVERY_BATCH = 16
# A webhook's `last_delivery` is written again when its outcome changes,
# else at most this often: a busy webhook is not rewritten per delivery
# (the delivery log has every attempt, to the millisecond).
LAST_DELIVERY_SECONDS = 1.0
MAX_OPENED = 256  # unsealed secrets kept in memory (`WebhookService._open`)
PRUNE = "webhooks.prune"
MANAGE = "webhooks/manage"
ROTATION_OVERLAP = DAY  # the old secret keeps signing this long after a rotation
SHOWN = ("_id", "name", "url", "events", "models", "headers", "enabled", "failures", "disabled_reason",
         "disabled_at", "created", "modified", "rotated", "last_delivery")
SCHEMA_KEYS = ("name", "url", "events", "models", "enabled")  # what a schema snapshot holds of a webhook


def attempt_seconds(settings: WebhooksSettings) -> float:
    """The longest a delivery attempt can take: the request within its
    deadline (`timeout_seconds`, resolving to the answer's last byte),
    then logging the attempt."""
    return settings.timeout_seconds + OUTCOME_WAIT


class DeliveryFailed(Exception):
    """An attempt did not reach a 2xx answer: the job retries."""


def public(hook: dict[str, Any]) -> dict[str, Any]:
    """A webhook as the API answers it: never its secret, sealed or not."""
    return {k: hook.get(k) for k in SHOWN}


def iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


class WebhookService:
    """Manages webhooks and turns the events they follow into deliveries."""

    def __init__(self, store: Store, cache: Cache, settings: WebhooksSettings, jobs: Jobs, sealer: Sealer,
                 clock: Callable[[], float] = time.time, events: Events | None = None) -> None:
        self.store = store
        self.events = events or Events()  # `webhooks.webhook.*`: the audit log follows them
        self.cache = cache
        self.settings = settings
        self.jobs = jobs
        self.sealer = sealer
        self.clock = clock
        self._opened: dict[str, str] = {}  # sealed secret -> secret (`_open`)
        self.policy = Policy.of(settings.allow_private, settings.allow_hosts)
        self.sender = Sender(self.policy, float(settings.timeout_seconds))
        self.webhooks = store.collection(WEBHOOKS)
        # What every write event is matched against: system data, read
        # again only after a write that changes it (`bump_system` in
        # create, update, delete and an automatic disabling), not per event.
        self._following = cache.system(self._load_following)
        self.deliveries = store.collection(DELIVERIES, DELIVERY_HINTS)
        store.ensure_indexes(DELIVERIES, DELIVERY_INDEXES, DELIVERY_HINTS)
        # The longest attempt: the request's one deadline, then logging it
        # (waiting at most OUTCOME_WAIT for the write lock). The jobs table
        # adds the time to record the outcome and a margin to make the
        # lease, so a live runner is never taken over mid-attempt.
        jobs.lane(WEBHOOKS_LANE, settings.concurrency)
        jobs.handle(DELIVERY, self._deliver_job, max_attempts=settings.max_attempts, batch=DELIVERY_BATCH,
                    retry_seconds=settings.retry_ms / 1000, lane=WEBHOOKS_LANE,
                    attempt_seconds=attempt_seconds(settings))
        self.daily = Daily(jobs, PRUNE, lambda store: self.prune(store),
                           f"logged deliveries older than {settings.keep_days} days", lambda: self.clock())

    def close(self) -> None:
        # the runner first: a delivery under way must not find its client closed
        self.jobs.close()
        self.sender.close()

    # -- managing -----------------------------------------------------------

    def all(self) -> list[dict[str, Any]]:
        return [public(h) for h in self.webhooks.find(None, [(("name",), 1), (("_id",), 1)])]

    def get(self, hook_id: str) -> dict[str, Any]:
        hook = self.webhooks.get(hook_id) if is_id(hook_id) else None
        if hook is None:
            raise NotFound("Webhook not found")
        return hook

    @staticmethod
    def _told(hook: dict[str, Any], identity: Identity | None,
              previous: dict[str, Any] | None = None) -> dict[str, Any]:
        """The payload of a `webhooks.webhook.*` event, sent inside the
        change's transaction: the webhook as the API shows it (never a
        secret) and, for a change, as it was."""
        return {"webhook": public(hook), "previous": None if previous is None else public(previous),
                "identity": identity or SYSTEM}

    async def create(self, data: Any, identity: Identity | None = None) -> dict[str, Any]:
        """A new webhook; its secret is in this answer and no other."""
        clean = check_webhook(data, None, self.policy)
        secret = new_secret()
        now = self.clock()
        hook = {"_id": new_id(), "name": clean["name"], "url": clean["url"], "events": clean["events"],
                "models": clean.get("models", []), "headers": clean.get("headers", {}),
                "enabled": clean.get("enabled", True), "failures": 0, "disabled_reason": None,
                "disabled_at": None, "created": now, "modified": now, "rotated": None, "last_delivery": None,
                "secret": self.sealer.seal(secret), "previous_secret": None, "previous_until": None}
        async with self.store.atomic():
            self.webhooks.insert(hook)
            self.cache.bump_system()
            with refusals_as_412():
                await self.events.emit("webhooks.webhook.save", **self._told(hook, identity))
        return {**public(hook), "secret": secret}

    async def update(self, hook_id: str, data: Any, identity: Identity | None = None) -> dict[str, Any]:
        async with self.store.atomic():
            hook = self.get(hook_id)
            previous = dict(hook)
            clean = check_webhook(data, hook, self.policy)
            if clean.get("enabled") is True and not hook["enabled"]:
                clean.update(failures=0, disabled_reason=None, disabled_at=None)
            hook.update(clean, modified=self.clock())
            self.webhooks.replace(hook)
            self.cache.bump_system()
            with refusals_as_412():
                await self.events.emit("webhooks.webhook.save", **self._told(hook, identity, previous))
        return public(hook)

    async def delete(self, hook_id: str, identity: Identity | None = None) -> None:
        """The webhook goes with its delivery log; its pending deliveries
        fail when they run (they find no webhook)."""
        async with self.store.atomic():
            hook = self.get(hook_id)
            self.webhooks.delete(hook_id)
            self.deliveries.delete_many({"hook": hook_id})
            self.cache.bump_system()
            with refusals_as_412():
                await self.events.emit("webhooks.webhook.remove", **self._told(hook, identity))

    def schema_part(self) -> SchemaPart:
        """Webhooks in schema snapshots, by name: what they send where, never
        a secret, and not their headers (which may carry credentials: a
        webhook keeps its own; one the apply makes has none). A webhook the
        apply makes gets a secret of its own, read by rotating it."""
        def entries() -> list[dict[str, Any]]:
            return [{k: h[k] for k in SCHEMA_KEYS} for h in self.all()]

        async def apply(current: dict[str, Any] | None, wanted: dict[str, Any] | None, identity: Any) -> None:
            found = next((h for h in self.all() if h["name"] == (wanted or current or {}).get("name")), None)
            if wanted is None:
                if found is not None:
                    await self.delete(found["_id"], identity)
            elif found is None:
                await self.create(wanted, identity)
            else:
                await self.update(found["_id"], wanted, identity)

        def check(wanted: dict[str, Any]) -> None:
            extra = sorted(set(wanted) - set(SCHEMA_KEYS))
            if extra:
                raise BadRequest(f"unknown keys {', '.join(extra)} (a webhook has {', '.join(SCHEMA_KEYS)})")
            check_webhook(wanted, None, self.policy)

        return SchemaPart("webhooks", entries, lambda current, wanted: Effect(), apply, check=check)

    async def rotate(self, hook_id: str, identity: Identity | None = None) -> dict[str, Any]:
        """A new secret, answered once. The old one keeps signing beside it
        for `ROTATION_OVERLAP` seconds (two signatures in the header), so
        receivers can switch without losing deliveries."""
        secret = new_secret()
        async with self.store.atomic():
            hook = self.get(hook_id)
            now = self.clock()
            hook.update(previous_secret=hook["secret"], previous_until=now + ROTATION_OVERLAP,
                        secret=self.sealer.seal(secret), rotated=now, modified=now)
            self.webhooks.replace(hook)
            with refusals_as_412():
                await self.events.emit("webhooks.webhook.rotate", **self._told(hook, identity))
        return {**public(hook), "secret": secret}

    async def enable(self, hook_id: str, identity: Identity | None = None) -> dict[str, Any]:
        """Turn a webhook back on; its count of failures starts again."""
        return await self.update(hook_id, {"enabled": True}, identity)

    def delivery_log(self, hook_id: str, limit: int, skip: int) -> tuple[list[dict[str, Any]], int]:
        self.get(hook_id)
        node = {"hook": hook_id}
        page = self.deliveries.find(node, [(("at",), -1), (("_id",), -1)], limit=limit, skip=skip)
        return [{k: v for k, v in d.items() if k != "body"} for d in page], self.deliveries.count(node)

    async def redeliver(self, hook_id: str, delivery_id: str) -> dict[str, Any]:
        """Send a logged message again, as it was (same `webhook-id` and body)."""
        async with self.store.atomic():
            hook = self.get(hook_id)
            logged = self.deliveries.get(delivery_id) if is_id(delivery_id) else None
            if logged is None or logged.get("hook") != hook_id:
                raise NotFound("Delivery not found")
            if not hook["enabled"]:
                raise BadRequest("The webhook is disabled: enable it first", fields=["enabled"])
            job = self.jobs.enqueue(DELIVERY, {"hook": hook_id, "msg": logged["msg"], "event": logged["event"],
                                               "body": logged["body"], "manual": True})
        self.jobs.wake(DELIVERY)
        return {"job": job["_id"], "msg": logged["msg"], "event": logged["event"]}

    # -- following events -----------------------------------------------------

    async def on_event(self, event: str, data: dict[str, Any], model: str | None = None) -> None:
        """Enqueue a delivery of `event` to each enabled webhook that follows
        it: inside the open write transaction (committed with the write), or
        in a transaction of its own for an event sent after its commit."""
        if self.store.in_transaction():
            if self._enqueue(event, data, model):
                self.store.after_commit(self._wake)
            return
        async with self.store.atomic():
            queued = self._enqueue(event, data, model)
        if queued:
            self._wake()

    def _wake(self) -> None:
        self.jobs.wake(DELIVERY)

    def _load_following(self) -> list[dict[str, Any]]:
        return [{"_id": h["_id"], "events": h["events"], "models": h["models"]}
                for h in self.webhooks.find({"enabled": True})]

    def _enqueue(self, event: str, data: dict[str, Any], model: str | None) -> int:
        followers = [h for h in self._following.get()
                     if matches(h["events"], event) and (model is None or not h["models"] or model in h["models"])]
        if not followers:
            return 0
        now = self.clock()
        body = orjson.dumps({"type": event, "timestamp": iso(now), "data": data}).decode()
        request = requestid.current()  # the HTTP request whose write this tells of, if any
        for hook in followers:
            self.jobs.enqueue(DELIVERY, {"hook": hook["_id"], "msg": f"msg_{new_id()}", "event": event,
                                         "body": body, "queued": now, "request": request})
        return len(followers)

    # -- delivering (in the jobs runner's thread) ------------------------------

    def _deliver_job(self, job: Job) -> None:
        payload = job.payload
        store = job.store
        hook = store.collection(WEBHOOKS).get(payload["hook"])
        if hook is None:
            raise GiveUp("the webhook was deleted")
        if not hook["enabled"]:
            self._record(job, None, 0, "not sent: the webhook is disabled", counts=False)
            raise GiveUp("the webhook is disabled")
        body = payload["body"].encode()
        now = self.clock()
        timestamp = int(now)
        try:
            secrets_now = [self._open(hook["secret"])]
            if hook.get("previous_secret") and (hook.get("previous_until") or 0) > now:
                secrets_now.append(self._open(hook["previous_secret"]))
        except ValueError as exc:  # another key than the one that sealed it: shown in the log, retried
            self._record(job, None, 0, f"not sent: {exc}")
            raise DeliveryFailed(str(exc)) from None
        headers = {**hook["headers"], "content-type": "application/json", "webhook-id": payload["msg"],
                   "webhook-timestamp": str(timestamp),
                   "webhook-signature": " ".join(sign(s, payload["msg"], timestamp, body) for s in secrets_now)}
        if payload.get("request"):
            headers["quire-request-id"] = payload["request"]
        started = time.monotonic()
        try:
            with tracing.span("webhook POST", {"quire.webhook": payload["hook"], "quire.event": payload["event"]},
                              kind="client"):
                headers.update(tracing.carrier())  # the receiver may continue the trace (traceparent)
                answer = self.sender.post(hook["url"], headers, body)
                tracing.annotate({"http.response.status_code": answer.status})
        except Refused as exc:
            self._record(job, None, 0, str(exc))
            raise GiveUp(str(exc)) from None
        except OSError as exc:  # TimedOut, BadAnswer and the socket's own
            ms = round((time.monotonic() - started) * 1000)
            error = f"{type(exc).__name__}: {exc}"[:MAX_LOGGED]
            self._record(job, None, ms, error)
            raise DeliveryFailed(error) from None
        if 200 <= answer.status < 300:
            self._record(job, answer.status, answer.milliseconds, None)
            return
        error = f"HTTP {answer.status}" + (f": {answer.body}" if answer.body else "")
        self._record(job, answer.status, answer.milliseconds, error[:MAX_LOGGED])
        raise DeliveryFailed(f"HTTP {answer.status}")

    def _open(self, sealed: str) -> str:
        """A webhook's secret, unsealed once per process and sealed value
        (unsealing is a quarter of a delivery's own CPU otherwise). A
        rotation seals a new value, so a rotated secret is never served
        from here; the dict holds the few webhooks a site has."""
        opened = self._opened.get(sealed)
        if opened is None:
            opened = self.sealer.open(sealed)
            if len(self._opened) >= MAX_OPENED:
                self._opened.clear()
            self._opened[sealed] = opened
        return opened

    def _record(self, job: Job, status: int | None, ms: int, error: str | None, counts: bool = True) -> None:
        """Log one attempt, and count it toward (or reset) the webhook's run
        of failures, in the transaction that records the job's outcome and
        only while this claim still holds the job (`Job.with_outcome`), so a
        runner taken over logs nothing and no attempt is logged twice."""
        payload = job.payload
        now = self.clock()

        tell("delivery", error is None)

        def write(store: Store) -> None:
            ok = error is None
            store.collection(DELIVERIES, DELIVERY_HINTS).insert({
                "_id": new_id(), "hook": payload["hook"], "msg": payload["msg"], "event": payload["event"],
                "job": job.id, "attempt": job.attempts, "status": status, "ok": ok, "ms": ms, "error": error,
                "at": now, "manual": bool(payload.get("manual")), "body": payload["body"],
                "request": payload.get("request")})
            hooks = store.collection(WEBHOOKS)
            hook = hooks.get(payload["hook"])
            if hook is not None and counts:
                failures = 0 if ok else int(hook.get("failures") or 0) + 1
                last = hook.get("last_delivery") or {}
                if (failures == hook.get("failures") and last.get("status") == status and last.get("ok") == ok
                        and now - (last.get("at") or 0) < LAST_DELIVERY_SECONDS):
                    return  # the webhook reads the same: no write of it per delivery
                hook["last_delivery"] = {"at": now, "status": status, "ok": ok}
                hook["failures"] = failures
                limit = self.settings.disable_after
                if limit and hook["failures"] >= limit and hook["enabled"]:
                    hook.update(enabled=False, disabled_at=now,
                                disabled_reason=f"{hook['failures']} deliveries failed in a row; last: {error}"[:500])
                    bump_system_version(store)
                    log.warning("webhooks: %s (%s) disabled after %d failed deliveries",
                                hook["_id"], hook["name"], hook["failures"])
                hooks.replace(hook)

        job.with_outcome(write)

    # -- retention ------------------------------------------------------------

    def schedule(self) -> None:
        """Enqueue today's prune of the delivery log (one per cluster); a runner
        does it when it starts (`jobs.Daily`)."""
        self.daily.schedule()

    def prune(self, store: Store | None = None) -> int:
        """Drop logged attempts older than `keep_days` (0 keeps them)."""
        return drop_older(store or self.store, DELIVERIES, DELIVERY_HINTS, self.settings.keep_days, self.clock())

    def _prune_job(self, job: Job) -> None:
        self.daily.run(job)


def who(identity: Identity | None) -> dict[str, Any] | None:
    """Who made a change, as a payload names them (no key, no secret)."""
    if identity is None:
        return None
    return {"kind": "public" if identity.anonymous else identity.kind, "id": identity.key_id,
            "name": identity.key_name}
