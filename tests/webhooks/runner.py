"""A jobs runner that delivers webhooks, in a process of its own: what one
Quire instance runs, for tests that need several processes or kill one.

    python -m tests.webhooks.runner <data dir>

Settings come from QUIRE_* in the environment ([webhooks], [jobs], [store]).
Prints "ready" once its runner thread started; runs until stdin closes (or
until SIGKILL, which is what the tests use it for)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from quire.cache import Cache
from quire.config import WebhooksSettings, load_settings
from quire.jobs import Jobs
from quire.store import open_store
from quire.webhooks.sealing import Sealer, key_text
from quire.webhooks.service import WebhookService


def main() -> None:
    logging.basicConfig(level=logging.INFO, format=f"runner {os.getpid()} %(levelname)s %(name)s: %(message)s")
    data_dir = Path(sys.argv[1])
    settings = load_settings(data_dir, env={k: v for k, v in os.environ.items() if k.startswith("QUIRE_")})
    store = open_store(settings.store.url, settings.db_path, settings.store.lock_timeout_ms / 1000)
    jobs = Jobs(store, settings.jobs)
    section = settings.section(WebhooksSettings)
    webhooks = WebhookService(store, Cache(store), section, jobs, Sealer(key_text(section.key, data_dir)))
    jobs.start()
    print("ready", flush=True)
    sys.stdin.read()
    jobs.close()
    webhooks.close()
    store.close()


if __name__ == "__main__":
    main()
