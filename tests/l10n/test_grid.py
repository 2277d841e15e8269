"""The service's reads and writes for the studio's grid: pages of keys
filtered to those missing a locale and searched, kept between writes and
fresh after every one (of this service, of the API, of another process);
single values, and keys added, renamed and deleted in one write each."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from quire.app import Quire
from quire.auth.service import Identity
from quire.errors import BadRequest, Forbidden, NotFound
from tests.conftest import Api
from tests.l10n.conftest import patch

ADMIN = Identity("admin", key_id="test")
READER = Identity("reader", frozenset({"l10n/read"}), key_id="r")


def _keys(page: Any) -> list[str]:
    return [key for key, _ in page.rows]


def test_pages_filter_and_search(quire: Quire, site: dict[str, Any]) -> None:
    grid = quire.l10n.grid("site", READER)
    assert grid.keys == 6 and grid.total == 6 and grid.locales == ["en", "de", "pt-BR"]
    assert grid.missing == {"en": 1, "de": 3, "pt-BR": 5}
    assert _keys(quire.l10n.grid("site", READER, missing="de")) == ["Loading...", "empty", "menu.edit"]
    assert _keys(quire.l10n.grid("site", READER, missing="pt_br", skip=1, limit=2)) == ["empty", "menu.edit"]
    assert quire.l10n.grid("site", READER, missing="pt_br", skip=1, limit=2).total == 5
    assert _keys(quire.l10n.grid("site", READER, missing="*")) == ["Loading...", "empty", "menu.edit", "menu.file",
                                                                   "menu.file.open"]
    assert _keys(quire.l10n.grid("site", READER, q="ÖFF")) == ["menu.file.open"]  # values, any case
    assert _keys(quire.l10n.grid("site", READER, q="menu.f", missing="pt-BR")) == ["menu.file", "menu.file.open"]
    with pytest.raises(NotFound):
        quire.l10n.grid("site", READER, missing="fr")
    with pytest.raises(NotFound):
        quire.l10n.grid("nope", READER)
    with pytest.raises(Forbidden):
        quire.l10n.grid("site", Identity("nobody", key_id="n"))


def test_the_kept_index_follows_every_write(quire: Quire, admin: Api, site: dict[str, Any]) -> None:
    assert quire.l10n.grid("site", READER).missing["de"] == 3
    asyncio.run(quire.l10n.set_value("site", "menu.edit", "de", "Bearbeiten", ADMIN))
    assert quire.l10n.grid("site", READER).missing["de"] == 2
    assert patch(admin, "site", {"keys": {"empty": {"de": "Leer"}}}).status_code == 200  # through the API
    assert quire.l10n.grid("site", READER).missing["de"] == 1
    other = Quire(quire.settings)  # another process: its own connection to the same data
    try:
        asyncio.run(other.l10n.set_value("site", "Loading...", "de", "Lädt…", ADMIN))
    finally:
        other.close()
    quire.store.mark_stale()  # as every request does
    assert quire.l10n.grid("site", READER).missing["de"] == 0
    asyncio.run(quire.l10n.delete("site", ADMIN))
    with pytest.raises(NotFound):
        quire.l10n.grid("site", READER)


def test_values_and_keys_change_one_write_each(quire: Quire, site: dict[str, Any]) -> None:
    l10n = quire.l10n
    stored = asyncio.run(l10n.set_value("site", "menu.edit", "pt_br", "Editar", ADMIN))
    assert stored["keys"]["menu.edit"] == {"en": "Edit", "pt-BR": "Editar"}
    assert asyncio.run(l10n.set_value("site", "menu.edit", "en", "", ADMIN))["keys"]["menu.edit"] == {"pt-BR": "Editar"}
    with pytest.raises(NotFound, match="renamed or deleted meanwhile"):
        asyncio.run(l10n.set_value("site", "gone", "en", "x", ADMIN))
    with pytest.raises(NotFound, match="not configured"):
        asyncio.run(l10n.set_value("site", "hello", "fr", "Salut", ADMIN))
    with pytest.raises(Forbidden):
        asyncio.run(l10n.set_value("site", "hello", "de", "Servus", READER))
    assert asyncio.run(l10n.add_key("site", "new.key", ADMIN))["keys"]["new.key"] == {}
    with pytest.raises(BadRequest, match="exists already"):
        asyncio.run(l10n.add_key("site", "hello", ADMIN))
    with pytest.raises(BadRequest, match="1 to 1,000 characters"):
        asyncio.run(l10n.add_key("site", "", ADMIN))
    renamed = asyncio.run(l10n.rename_key("site", "hello", "greeting", ADMIN))
    assert "hello" not in renamed["keys"] and renamed["keys"]["greeting"] == {"en": "Hello", "de": "Hallo",
                                                                              "pt-BR": "Olá"}
    with pytest.raises(BadRequest, match="exists already"):
        asyncio.run(l10n.rename_key("site", "greeting", "menu.file", ADMIN))
    with pytest.raises(NotFound):
        asyncio.run(l10n.rename_key("site", "hello", "x", ADMIN))
    assert "greeting" not in asyncio.run(l10n.delete_key("site", "greeting", ADMIN))["keys"]
    with pytest.raises(NotFound):
        asyncio.run(l10n.delete_key("site", "greeting", ADMIN))
