"""A jobs runner that sends e-mail, in a process of its own: what one Quire
instance runs, for tests that need several processes or kill one.

    python -m tests.inbox.mail_runner <data dir> <lease seconds>

Settings come from QUIRE_* in the environment ([smtp], [jobs]). Prints
"ready" once its runner thread started; runs until stdin closes (or until
SIGKILL, which is what the tests use it for)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from quire.config import load_settings
from quire.inbox.mailer import Mailer
from quire.jobs import Jobs
from quire.store import SqliteStore


def main() -> None:
    logging.basicConfig(level=logging.INFO, format=f"runner {os.getpid()} %(levelname)s %(name)s: %(message)s")
    data_dir, lease = Path(sys.argv[1]), float(sys.argv[2])
    settings = load_settings(data_dir, env={k: v for k, v in os.environ.items() if k.startswith("QUIRE_")})
    store = SqliteStore(settings.db_path)
    jobs = Jobs(store, settings.jobs)
    Mailer(settings.smtp, data_dir / "uploads", jobs, lease_seconds=lease)
    jobs.start()
    print("ready", flush=True)
    sys.stdin.read()
    jobs.close()
    store.close()


if __name__ == "__main__":
    main()
