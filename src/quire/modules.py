"""What a feature module declares (`Module`), and what the modules of one
running instance built (`Services`).

A feature package (content, assets, pages, ...) exposes one `Module` in its
`__init__.py`. `app.py` composes a list of them; each is built in list order,
so a module can take what an earlier one built as a constructor argument.
This module sits at the bottom: it imports nothing of the features.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from quire.asgi import Route
    from quire.bundleparts import BatchedPart, BundlePart
    from quire.cache import Cache
    from quire.config import Settings
    from quire.events import Events
    from quire.store import Store

T = TypeVar("T")


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
        self._by_type: dict[type, object] = {}
        self._by_name: dict[str, object] = {}
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

    def start(self) -> None:
        for fn in self._on_start:
            fn()

    def close(self) -> None:
        for fn in reversed(self._on_close):
            fn()


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
    """

    name: str
    build: Callable[[Services], None] | None = None
    routes: Sequence[Route] = ()
    openapi: Callable[[], dict[str, Any]] | None = None
    permissions: Sequence[str] = ()
    subscribe: Callable[[Services], None] | None = None
    bundle: Callable[[Services], Sequence[BundlePart | BatchedPart]] | None = None
    nav: Sequence[NavEntry] = ()
