"""What a feature module declares (`Module`), and what the modules of one
running instance built (`Services`).

A feature package (content, assets, pages, ...) exposes one `Module` in its
`__init__.py`. `app.py` composes a list of them; each is built in list order,
so a module can take what an earlier one built as a constructor argument.
This module sits at the bottom: it imports nothing of the features.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from quire.catalogue import EventSpec
from quire.endpoints import Endpoint, endpoint
from quire.errors import ConfigError

if TYPE_CHECKING:
    from quire.asgi import Route
    from quire.bundleparts import BatchedPart, BundlePart
    from quire.cache import Cache
    from quire.config import Settings
    from quire.events import Events
    from quire.schemaparts import SchemaPart
    from quire.store import Store

T = TypeVar("T")


class ItemSearch(Protocol):
    """Full-text search of content items, as the studio's lists use it."""

    def covers(self, model: str) -> bool:
        """Whether an index covers the items of `model`."""

    def matching(self, model: str, words: str, limit: int) -> tuple[list[str], int]:
        """The ids of at most `limit` items the words find, best first, and
        how many matched in all."""


class Services:
    """The services of one running instance (one per process), as modules
    built them: by name (`services.content`, as hooks and the CLI use them)
    and by type (`services.get(ContentService)`, as routes use them, typed)."""

    def __init__(self, settings: Settings, store: Store, cache: Cache, events: Events) -> None:
        self.settings = settings
        self.store = store
        self.cache = cache  # the one cache of the instance (cache.py)
        self.events = events
        # request limits and the public address, read by every module's routes
        self.max_body: int = settings.api.max_body_bytes
        self.max_depth: int = settings.api.max_json_depth
        self.public_url: str = settings.server.public_url
        # the modules that built these services, in build order (set by the app)
        self.modules: Sequence[Module] = ()
        # every permission name the modules declare (auth checks roles against it)
        self.permissions: set[str] = set()
        # the sidebar's links, of every module (set by the app), and where
        # its search box sends the words typed (set by the module answering them)
        self.nav: list[NavEntry] = []
        self.find_path: str | None = None
        # full-text search of a model's items, for the content lists' search
        # box (set by the search module when it is in the app)
        self.item_search: ItemSearch | None = None
        # every module's events, by name (catalogue.py; set by the app)
        self.catalogue: dict[str, EventSpec] = {}
        # a server worker stopping (set by the app's shutdown): `close` must be
        # done before the server kills it, so work another worker or the next
        # start does anyway (a search catch-up) is left to them
        self.stopping_worker = False
        # API endpoints the site's hooks add (endpoints.py), served by the system module
        self.endpoints: list[Endpoint] = []
        self._by_type: dict[type, object] = {}
        self._by_name: dict[str, object] = {}
        self.space_name: str | None = None  # the space these services serve (quire.sites), None: the main site
        # a space's: the main site's services, whose users and sessions its studio trusts (quire.sites)
        self.main_site: Services | None = None
        # the spaces a user may open, for the studio's space switcher: (label, address,
        # role) of each, the main site first (set where spaces are served: quire.served)
        self.spaces_of: Callable[[dict[str, Any]], list[tuple[str, str, str]]] | None = None
        self._on_start: list[Callable[[], None]] = []
        self._on_close: list[Callable[[], None]] = []

    def add(self, name: str, service: T) -> T:
        """Register `service` under `name` and its type; answers it."""
        if name in self._by_name or name in self.__dict__:
            raise ValueError(f"a service named {name!r} is already registered")
        self._by_name[name] = service
        self._by_type.setdefault(type(service), service)
        return service

    def get(self, kind: type[T]) -> T:
        """The service of type `kind` (exactly that class)."""
        try:
            return self._by_type[kind]  # type: ignore[return-value]
        except KeyError:
            raise LookupError(f"no {kind.__name__} was built: is its module in the list?") from None

    def __getattr__(self, name: str) -> Any:
        # only reached for names that are not plain attributes
        try:
            return self.__dict__["_by_name"][name]
        except KeyError:
            raise AttributeError(f"no service named {name!r}") from None

    def on_start(self, fn: Callable[[], None]) -> None:
        """Run `fn` when the server starts (not for the CLI)."""
        self._on_start.append(fn)

    def on_close(self, fn: Callable[[], None]) -> None:
        """Run `fn` when the instance closes; the last registered runs first."""
        self._on_close.append(fn)

    def add_endpoint(self, method: str, path: str, handler: Callable[[Any], Any], *, permission: str | None = None,
                     public: bool = False, summary: str = "") -> None:
        """Serve `handler` at `method path` (under /api/custom/) to callers
        holding `permission` (which roles can then grant), or to anyone when
        `public`; for hooks (docs/hooks.md)."""
        made = endpoint(method, path, handler, permission, public, summary)
        if any(e.method == made.method and e.path == made.path for e in self.endpoints):
            raise ConfigError(f"endpoint {made.method} {made.path} is added twice")
        self.endpoints.append(made)
        if made.permission is not None:
            self.permissions.add(made.permission)

    def notices(self, identity: Any) -> list[Notice]:
        """What the modules ask the studio to tell this user first."""
        return [n for m in self.modules if m.notices is not None for n in m.notices(self, identity)]

    def panels(self, identity: Any) -> list[Panel]:
        """The dashboard's parts this user sees, of every module, by order."""
        found = [p for m in self.modules if m.panels is not None for p in m.panels(self, identity)]
        return sorted(found, key=lambda p: p.order)

    def find(self, identity: Any, words: str) -> list[FindSection]:
        """What the studio's search box finds for `words`, of every module."""
        found = [f for m in self.modules if m.find is not None for f in m.find(self, identity, words)]
        return sorted(found, key=lambda f: f.order)

    def usage(self, identity: Any, kind: str, thing: str, limit: int) -> Usage:
        """Where the modules use the `kind` thing `thing` (at most `limit` listed)."""
        found: list[Found] = []
        total = hidden = 0
        for m in self.modules:
            used = m.usage(self, identity, kind, thing, limit) if m.usage is not None else None
            if used is not None:
                found += used.found
                total += used.total
                hidden += used.hidden
        return Usage(found, total, hidden)

    def start(self) -> None:
        for fn in self._on_start:
            fn()

    def close(self) -> None:
        for fn in reversed(self._on_close):
            fn()


def _always(doc: dict[str, Any]) -> bool:
    return True


def _id_of(doc: dict[str, Any]) -> str:
    return str(doc["_id"])


@dataclass(frozen=True)
class FeedKind:
    """Documents of a module that the change feed carries besides content
    items (docs/delivery.md), as `model` `name` (`@pages`): the events that
    write and remove one (their payload's `key` holds the document), the
    permission that reads them, and how to read them as a key sees them
    (`read(services, ids, locale, identity)`: the documents found, by id;
    one not in the key's view is left out). `visible(doc)`: whether a
    stored document is in readers' view (a published page); `ident(doc)`:
    the id a reader knows it by (a menu's name)."""

    name: str
    saved: Sequence[str]
    removed: Sequence[str]
    key: str
    permission: str
    read: Callable[[Services, list[str], str | None, Any], dict[str, dict[str, Any]]]
    visible: Callable[[dict[str, Any]], bool] = _always
    ident: Callable[[dict[str, Any]], str] = _id_of


@dataclass(frozen=True)
class NavEntry:
    """A link of the admin's sidebar, under the heading `group`, shown to a
    user whose Identity `allowed` accepts; `badge(services, login)` is a
    count shown beside it (the unread submissions), hidden when 0.
    Entries are listed by `order` then by module order."""

    label: str
    href: str
    group: str
    allowed: Callable[[Any], bool]
    badge: Callable[[Services, Any], int] | None = None
    order: int = 100


@dataclass(frozen=True)
class Notice:
    """A line at the top of the studio's content home: `title` in bold, then
    `detail`, then a link (a disabled webhook, from the webhooks module)."""

    title: str
    detail: str
    href: str
    link_text: str


@dataclass(frozen=True)
class Panel:
    """A part of the dashboard: the module's template (which reads `panel`,
    this object) and what it shows (`data`)."""

    template: str
    data: Any
    order: int = 100


@dataclass(frozen=True)
class Found:
    """One thing the search box found: its title and studio page, a code
    beside it (a name, a route), a note after it, a thumbnail."""

    title: str
    href: str
    code: str | None = None
    note: str = ""
    thumb: str | None = None


@dataclass(frozen=True)
class FindSection:
    """What a module found for the search box, under a heading."""

    heading: str
    found: Sequence[Found]
    order: int = 100


@dataclass(frozen=True)
class Usage:
    """Where a thing is used: the uses the user may open (`found`), how many
    uses there are in all, and how many of those looked at the user may not
    open (`hidden`)."""

    found: Sequence[Found]
    total: int
    hidden: int = 0


# eq=False: a module is one object, compared and hashed by identity
@dataclass(frozen=True, eq=False)
class Module:
    """One feature, as `app.py` composes it.

    - `build(services)` makes the module's services from the settings, the
      store and what earlier modules built, and `add`s them.
    - `routes`: its HTTP routes (each with its own CORS flag).
    - `openapi()`: its part of the OpenAPI `paths`.
    - `permissions`: the permission names a role can grant for it.
    - `subscribe(services)`: its event handlers, on `services.events`.
    - `bundle(services)`: its parts of export/import bundles (bundleparts.py),
      in the order they load; bundle.py takes them in module order.
    - `nav`: its links in the admin's sidebar.
    - `templates`: the folder of its screens' templates, which holds them
      in a folder named after the module (`templates/pages/tree.html` is
      the template "pages/tree.html").
    - `static`: the folder of its screens' scripts and styles, served at
      `/studio/static/<name>` (names are shared with every module's: a
      module's files carry its name, as `pages.js`).
    - `notices(services, identity)`: lines for the top of the content home.
    - `panels(services, identity)`: its parts of the dashboard.
    - `find(services, identity, words)`: what the studio's search box
      finds among its things, as the user may see them.
    - `usage(services, identity, kind, id, limit)`: where its things use
      another module's thing (`kind` "asset": the items holding an asset),
      at most `limit` listed; None when they cannot use that kind.
    - `field_types`: field types it adds to content models
      (`quire.content.types.FieldType`, one record each).
    - `events`: the events it sends (`quire.catalogue.EventSpec`).
    - `schema(services)`: its parts of schema snapshots (schemaparts.py),
      in the order their changes are made; schema.py takes them in module
      order.
    """

    name: str
    build: Callable[[Services], None] | None = None
    routes: Sequence[Route] = ()
    openapi: Callable[[], dict[str, Any]] | None = None
    permissions: Sequence[str] = ()
    subscribe: Callable[[Services], None] | None = None
    bundle: Callable[[Services], Sequence[BundlePart | BatchedPart]] | None = None
    nav: Sequence[NavEntry] = ()
    templates: Path | None = None
    static: Path | None = None
    notices: Callable[[Services, Any], Sequence[Notice]] | None = None
    panels: Callable[[Services, Any], Sequence[Panel]] | None = None
    find: Callable[[Services, Any, str], Sequence[FindSection]] | None = None
    usage: Callable[[Services, Any, str, str, int], Usage | None] | None = None
    field_types: Sequence[Any] = ()  # quire.content.types.FieldType records
    events: Sequence[EventSpec] = ()
    schema: Callable[[Services], Sequence[SchemaPart]] | None = None
    feed: Sequence[FeedKind] = ()  # what it puts in the change feed besides content items
    # gauges read when /metrics is scraped (quire.metrics.Gauges): [(name, help, labels, [(values, value)])]
    gauges: Callable[[Services], Iterable[Any]] | None = None
