"""The item editor over HTTP: every field type from the form to the stored
item (read back through the API), locales, validation, conflicts,
permissions, singletons, rich text cleaning, uploads and the link picker."""

from __future__ import annotations

import io
import re
from typing import Any

from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, post_form

FIELDS = [
    {"name": "title", "type": "text", "required": True, "i18n": True},
    {"name": "summary", "type": "longtext"},
    {"name": "body", "type": "wysiwyg"},
    {"name": "notes", "type": "markdown"},
    {"name": "snippet", "type": "code", "opts": {"language": "javascript"}},
    {"name": "rating", "type": "number"},
    {"name": "featured", "type": "boolean"},
    {"name": "day", "type": "date"},
    {"name": "at", "type": "datetime"},
    {"name": "clock", "type": "time"},
    {"name": "category", "type": "select", "opts": {"options": ["news", "guides"]}},
    {"name": "labels", "type": "tags"},
    {"name": "tint", "type": "color"},
    {"name": "extra", "type": "object"},
    {"name": "seo", "type": "set", "group": "SEO", "opts": {"fields": [
        {"name": "keywords", "type": "text"}, {"name": "weight", "type": "number"}]}},
    {"name": "prices", "type": "table"},
    {"name": "picture", "type": "asset"},
    {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
    {"name": "links", "type": "text", "multiple": True},
    {"name": "hero", "type": "variants"},
]


def _models(admin: Api) -> None:
    admin.put("/api/system/locales", json={"data": [{"i18n": "de", "name": "German"}]})
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", type="collection", fields=FIELDS)


def test_smoke(app: Any, admin: Api) -> None:
    _models(admin)
    ann = logged_in(app)
    page = ann.get("/studio/content/posts/item")
    assert page.status_code == 200, page.text
    print(page.text[-3000:])
