"""The example module package (examples/redirects), installed as a site
installs it (`pip install -e examples/redirects`, done by `make dev`):
these tests turn on the modules of installed packages, which the rest of
the suite leaves out."""

from __future__ import annotations

import pytest

pytest.importorskip("quire_redirects", reason="the example module package is not installed (make dev installs it)")


@pytest.fixture
def app_env(app_env: dict[str, str]) -> dict[str, str]:
    return {**app_env, "QUIRE_MODULES_PACKAGES": "true"}
