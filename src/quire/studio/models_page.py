"""(filled in by the studio's models_page work)"""

from __future__ import annotations

from quire.asgi import Route

routes: list[Route] = []
