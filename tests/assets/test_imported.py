"""Assets taken in whole (a Cockpit import, a bundle with files) keep their
path, unless it is another asset's file or where form attachments live."""

from __future__ import annotations

from quire.assets import imported
from quire.assets.service import AssetService
from quire.auth.service import SYSTEM
from quire.ids import new_id
from tests.assets.helpers import solid, upload_one
from tests.conftest import Api

PNG = solid(3, 3)


def test_a_path_taken_by_another_asset_or_private_is_not_kept(admin: Api) -> None:
    assets = admin.client.app.state.quire.get(AssetService)
    there = upload_one(admin, "there.png", solid(4, 4))

    own = imported.prepare(assets, {"_id": there["_id"], "path": there["path"]}, PNG, SYSTEM)
    assert own["path"] == there["path"]  # the same asset again replaces its own file

    other = imported.prepare(assets, {"_id": new_id(), "path": there["path"]}, PNG, SYSTEM)
    assert other["path"] != there["path"] and other["path"].endswith(".png")

    private = imported.prepare(assets, {"_id": new_id(), "path": "/inbox/uploads/x.png"}, PNG, SYSTEM)
    assert not private["path"].startswith("/inbox/")

    free = imported.prepare(assets, {"_id": new_id(), "path": "/2020/01/free.png"}, PNG, SYSTEM)
    assert free["path"] == "/2020/01/free.png"
