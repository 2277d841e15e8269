"""(filled in by the studio's lists work)"""

from __future__ import annotations

from quire.asgi import Route

routes: list[Route] = []
