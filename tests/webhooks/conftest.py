from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.webhooks.receiver import Receiver

# Short retries and few attempts: a test sees a retry, a give-up and an
# automatic disabling in well under a second.
WEBHOOK_ENV = {"QUIRE_WEBHOOKS_ALLOW_HOSTS": "127.0.0.1", "QUIRE_WEBHOOKS_RETRY_MS": "20",
               "QUIRE_WEBHOOKS_MAX_ATTEMPTS": "4", "QUIRE_WEBHOOKS_DISABLE_AFTER": "3",
               "QUIRE_WEBHOOKS_TIMEOUT_SECONDS": "2"}


@pytest.fixture
def app_env(app_env: dict[str, str]) -> dict[str, str]:
    return {**app_env, **WEBHOOK_ENV}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()
