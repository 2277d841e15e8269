"""Persisted queries by SHA-256, as the Automatic Persisted Queries
protocol has them: a client sends `extensions.persistedQuery.sha256Hash`
alone (a short GET a CDN can cache); when the hash is unknown it is told
`PersistedQueryNotFound` and sends the query with its hash once, which is
kept (in the store: every worker and instance knows it from then on)."""

from __future__ import annotations

import re
import time

from quire.cache import Cache
from quire.errors import BadRequest
from quire.gql.request import Operation
from quire.gql.service import Refused, query_hash
from quire.store import Store

QUERIES = "system/gql_queries"
HASH = re.compile(r"^[0-9a-f]{64}$")
KEPT_TEXT = 2 * 1024 * 1024  # bytes of query text kept in memory by hash


class PersistedQueries:
    def __init__(self, store: Store, cache: Cache, limit: int) -> None:
        self.store = store
        self.limit = limit  # queries kept at most; 0: the protocol is off
        self.queries = store.collection(QUERIES, {"at": "number"})
        store.ensure_indexes(QUERIES, [[("at",)]], {"at": "number"})
        self._known = cache.memo("gql.persisted", KEPT_TEXT)

    async def resolve(self, operation: Operation) -> str | None:
        """The query to run: the one sent (kept under its hash when the
        request names one), or the one kept under the hash sent alone."""
        asked = operation.extensions.get("persistedQuery")
        if asked is None:
            return operation.query
        if not isinstance(asked, dict) or asked.get("version") != 1 or not isinstance(asked.get("sha256Hash"), str):
            raise BadRequest('extensions.persistedQuery must be {"version": 1, "sha256Hash": "<64 hex digits>"}')
        digest = asked["sha256Hash"].lower()
        if not HASH.match(digest):
            raise BadRequest("extensions.persistedQuery.sha256Hash must be 64 hexadecimal digits")
        if self.limit == 0:
            raise Refused(200, [{"message": "PersistedQueryNotSupported",
                                 "extensions": {"code": "PERSISTED_QUERY_NOT_SUPPORTED"}}])
        if operation.query is None:
            known = self._lookup(digest)
            if known is None:
                raise Refused(200, [{"message": "PersistedQueryNotFound",
                                     "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}])
            return known
        if query_hash(operation.query) != digest:
            raise BadRequest("provided sha does not match query")
        if self._lookup(digest) is None:
            await self._keep(digest, operation.query)
        return operation.query

    def _lookup(self, digest: str) -> str | None:
        known: str | None = self._known.get(digest)
        if known is None:
            doc = self.queries.get(digest)
            if doc is not None:
                known = doc["query"]
                self._known.put(digest, known, len(known) + 100)
        return known

    async def _keep(self, digest: str, query: str) -> None:
        """Kept under its hash; past the limit the oldest tenth goes."""
        async with self.store.atomic():
            if self.queries.get(digest) is not None:
                return
            if self.queries.count() >= self.limit:
                for old in self.queries.find(None, [(("at",), 1)], limit=max(1, self.limit // 10)):
                    self.queries.delete(old["_id"])
            self.queries.insert({"_id": digest, "query": query, "at": time.time()})
        self._known.put(digest, query, len(query) + 100)
