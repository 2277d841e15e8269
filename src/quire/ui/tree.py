"""A tree model's items as the studio shows them (nested, in their `_o`
order) and the keyboard's moves: up, down, indent (under the item above),
outdent (after its parent), each turned into the parent and position that
`ContentService.move` takes, as a drag and drop sends them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MOVES = ("up", "down", "indent", "outdent")


@dataclass
class Spot:
    parent: str | None
    siblings: list[dict[str, Any]]
    index: int
    parent_spot: Spot | None


def find(nodes: list[dict[str, Any]], item_id: str, parent: str | None = None,
         parent_spot: Spot | None = None) -> Spot | None:
    """Where `item_id` hangs in the tree (nodes with `_children`)."""
    for index, node in enumerate(nodes):
        here = Spot(parent, nodes, index, parent_spot)
        if node["_id"] == item_id:
            return here
        below = find(node.get("_children") or [], item_id, node["_id"], here)
        if below is not None:
            return below
    return None


def target(nodes: list[dict[str, Any]], item_id: str, move: str) -> tuple[str | None, int] | None:
    """(parent, position) of a keyboard move; None when it cannot move that
    way (the first item up, the last down, the first indented, a top item
    outdented) or is not in the tree."""
    spot = find(nodes, item_id)
    if spot is None:
        return None
    if move == "up" and spot.index > 0:
        return spot.parent, spot.index - 1
    if move == "down" and spot.index < len(spot.siblings) - 1:
        return spot.parent, spot.index + 1
    if move == "indent" and spot.index > 0:
        above = spot.siblings[spot.index - 1]
        return above["_id"], len(above.get("_children") or [])
    if move == "outdent" and spot.parent_spot is not None:
        return spot.parent_spot.parent, spot.parent_spot.index + 1
    return None


def count(nodes: list[dict[str, Any]]) -> int:
    return sum(1 + count(n.get("_children") or []) for n in nodes)
