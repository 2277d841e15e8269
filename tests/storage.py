"""Where the tests' files live: the data folder (the default), or a bucket
on a local S3-compatible server (moto's, started by the tests on
127.0.0.1) when the run asks for it with `QUIRE_TEST_STORAGE=s3`:

    QUIRE_TEST_STORAGE=s3 pytest tests/assets tests/inbox

The `app_env` fixture (tests/conftest.py) then gives every app of a test
of the suites about files (`S3_SUITES`: assets and forms) the settings of a
bucket of its own; `make test` runs its PostgreSQL pass so. Tests look at stored files through
`stored_keys` / the app's `Files`, never at the data folder, so they hold on
either; the few that are about the local folder itself are `local_only`.
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any

import pytest

from quire.files import Files

ON_S3 = os.environ.get("QUIRE_TEST_STORAGE", "local") == "s3"
# The suites whose apps keep their files in a bucket on such a run: the
# others store no file, and a bucket and its client cost a test time.
S3_SUITES = ("tests/assets/", "tests/inbox/")
local_only = pytest.mark.skipif(ON_S3, reason="about files in the local data folder (QUIRE_TEST_STORAGE=s3 run)")
ACCESS_KEY = "quire-test"
SECRET_KEY = "quire-test-secret"  # moto accepts any credentials
REGION = "us-east-1"


class S3Server:
    """moto's S3 server in a thread of this test process, on a free
    loopback port."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        import boto3

        self._session = boto3.session.Session()  # loads the API's models once, not per client
        self._admin = self.client()

    def client(self) -> Any:
        """A client of the test's own (close it)."""
        return self._session.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                                    aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def new_bucket(self) -> str:
        name = f"quire-test-{uuid.uuid4().hex[:16]}"
        self._admin.create_bucket(Bucket=name)
        return name

    def env(self, bucket: str, prefix: str = "site") -> dict[str, str]:
        """The QUIRE_* settings of an app whose files live in `bucket`."""
        return {"QUIRE_ASSETS_STORAGE": f"s3://{bucket}/{prefix}", "QUIRE_ASSETS_S3_ENDPOINT": self.endpoint,
                "QUIRE_ASSETS_S3_REGION": REGION, "QUIRE_ASSETS_S3_ACCESS_KEY": ACCESS_KEY,
                "QUIRE_ASSETS_S3_SECRET_KEY": SECRET_KEY}

    def stop(self) -> None:
        self._admin.close()
        self._server.stop()


def stored_keys(files: Files, prefix: str = "") -> list[str]:
    """The keys of every stored file in the folder `prefix` of `files`,
    sorted (hidden files being written, and lock files, are none)."""
    return sorted(info.key for info in files.list(prefix))
