"""The server's ASGI app when the site has spaces (docs/spaces.md): the
main site's app, and each space's own at `/<name>/api/...`,
`/<name>/storage/...` and its studio at `/<name>/` (the same paths under
the space's name, as Cockpit serves its spaces), built in each worker the
first time it is asked for, with its own database, files, jobs and caches.

A space's app sees its own paths (`/studio/...`); its answers' redirects
here, and its pages' links where they are rendered (quire.ui.web), are put
under the space's name. Its studio trusts the main site's sessions: users
are the main site's, with a role per space.

The list of spaces is the main site's (`system/spaces`), read again only
after a change anywhere (its system version): a space created through one
worker or instance is served by every other at its next request, and a
removed one is closed and answers 404 there too. A path whose first part
the main site serves itself (`api`, `studio`, ...) never looks at the
list, so the main site's requests pay nothing for it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from quire.asgi import App, Receive, Scope, Send
from quire.config import Settings
from quire.errors import StoreBusy, StoreUnavailable
from quire.modules import Module, Services
from quire.responses import json_response
from quire.spaces.service import SpaceService, space_settings
from quire.ui.web import SHARED_PATHS, SPACE_ROOTS, space_path

log = logging.getLogger("quire.sites")

# headers of a space's answers that name an address of the space: a redirect's and htmx's
MOVED_HEADERS = (b"location", b"hx-redirect", b"hx-location", b"hx-push-url", b"hx-replace-url")


class Sites:
    def __init__(self, main: App, build: Callable[[Settings, list[Module]], App]) -> None:
        self.main = main
        self.state = main.state  # tests and hooks read `app.state.quire`: the main site's
        self.quire: Services = main.state.quire
        self.build = build
        self.apps: dict[str, tuple[float | None, App]] = {}  # a space's name: (when it was made, its app)
        self.roots = {r.path.split("/")[1] for r in main.routes}
        self.quire.on_close(self.close)
        self.quire.get(SpaceService).closing.append(self._close)  # removed through this worker: at once
        self._looked = 0.0

    @property
    def routes(self) -> Sequence[Any]:
        return self.main.routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            name, _, rest = path[1:].partition("/")
            try:
                served = rest.split("/", 1)[0] in SPACE_ROOTS or rest == "" or path == "/" + name
                if name and name not in self.roots and served:
                    space = self.space(name)
                    if space is not None:
                        await self._serve(space, name, rest, scope, receive, send)
                        return
                if self.apps and time.monotonic() - self._looked > 1.0:
                    self._drop_gone()  # removed elsewhere: this worker's app of it stops within a second
            except (StoreBusy, StoreUnavailable) as exc:
                await json_response({"error": exc.message}, 503, {"Retry-After": "1"})(scope, receive, send)
                return
        await self.main(scope, receive, send)

    async def _serve(self, space: App, name: str, rest: str, scope: Scope, receive: Receive, send: Send) -> None:
        base = scope.get("root_path", "") + "/" + name
        inner_path = "/" + rest
        if scope["path"] == "/" + name or any(inner_path == p or inner_path.startswith(p + "/")
                                               for p in SHARED_PATHS):
            # `/<name>` is its studio at `/<name>/`; what stays the main site's goes there
            target = base + "/" if scope["path"] == "/" + name else inner_path
            query = scope.get("query_string", b"").decode("latin-1")
            headers = {"location": target + (f"?{query}" if query else ""), "cache-control": "no-store"}
            await json_response({"error": "Moved"}, 307, headers)(scope, receive, send)
            return
        inner = dict(scope)
        inner["path"] = inner_path
        raw = scope.get("raw_path") or scope["path"].encode()
        inner["raw_path"] = raw[len(name) + 1:] if raw.startswith(b"/" + name.encode() + b"/") \
            else inner_path.encode()
        inner["root_path"] = base

        async def moved(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [(k, space_path(base, v.decode("latin-1"), root=True).encode("latin-1"))
                                      if k.lower() in MOVED_HEADERS else (k, v) for k, v in message["headers"]]
            await send(message)

        await space(inner, receive, moved)

    def _drop_gone(self) -> dict[str, str]:
        self._looked = time.monotonic()
        self.quire.cache.refresh()
        served = self.quire.get(SpaceService).served()
        for gone in [n for n in self.apps if n not in served.values()]:
            self._close(gone)
        return served

    def space(self, name: str) -> App | None:
        """The app of space `name` in this worker, or None when there is no
        such space (any more: one removed elsewhere is closed here)."""
        served = self._drop_gone()
        target = served.get(name)  # a space's own name, or an alias of it
        if target is None:
            return None
        name = target
        made = self.quire.get(SpaceService).incarnations().get(name)
        kept = self.apps.get(name)
        if kept is not None and kept[0] != made:  # removed and made again: another site now
            self._close(name)
            kept = None
        if kept is None:
            modules = [m for m in self.quire.modules if m.name != "spaces"]  # a space has no spaces
            app = self.build(space_settings(self.quire.settings, name), modules)
            app.state.quire.space_name = name
            app.state.quire.main_site = self.quire
            app.state.quire.start()
            kept = self.apps[name] = (made, app)
        return kept[1]

    def _close(self, name: str) -> None:
        kept = self.apps.pop(name, None)
        if kept is not None:
            try:
                kept[1].state.quire.close()
            except Exception:  # noqa: BLE001 (one space's close must not keep the others open)
                log.exception("closing space %s", name)

    def close(self) -> None:
        for name in list(self.apps):
            self._close(name)
