"""Parent links of trees (content tree models, the page tree): the one walk
that decides whether a node may hang under a parent."""

from __future__ import annotations

from collections.abc import Callable

MISSING = object()  # what `parent_of` answers for a node that does not exist


def parent_problem(node_id: str, pid: str | None, parent_of: Callable[[str], object]) -> str | None:
    """Why `node_id` cannot hang under `pid`: "missing" when an ancestor
    does not exist, "cycle" when the node would become its own ancestor;
    None when it can. `parent_of(id)` answers that node's parent id (None
    at the top), or `MISSING` when there is no such node."""
    seen = {node_id}
    while pid is not None:
        if pid in seen:
            return "cycle"
        seen.add(pid)
        parent = parent_of(pid)
        if parent is MISSING:
            return "missing"
        pid = parent if isinstance(parent, str) else None
    return None

