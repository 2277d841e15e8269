"""(filled in by the studio's editor work)"""

from __future__ import annotations

from quire.asgi import Route

routes: list[Route] = []
