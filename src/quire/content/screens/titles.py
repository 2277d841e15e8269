"""How the studio names an item in lists, pickers and headings: its
title-like field (the first of title, name, label, slug, or else the
model's first text field), or its id."""

from __future__ import annotations

from typing import Any

from quire.content.models import Model

TITLE_NAMES = ("title", "name", "label", "headline", "slug")


def title_fields(model: Model) -> list[str]:
    """The model's fields that name an item, best first: the title-like
    names the model has, else its first single text field."""
    texts = [f["name"] for f in model.fields if f["type"] == "text" and not f.get("multiple")]
    named = [n for n in TITLE_NAMES if n in texts]
    return named or texts[:1]


def title_of(model: Model, item: dict[str, Any]) -> str:
    for name in title_fields(model):
        value = item.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return str(item.get("_id", ""))
