"""Webhook secrets: made, encrypted at rest, and used to sign.

A secret is `whsec_` + base64 of 32 random bytes (the Standard Webhooks
form). It is stored encrypted with Fernet (AES-128-CBC + HMAC-SHA256) under
a key derived from `[webhooks] key`, or from a key file made once in the
data folder when that setting is empty. Every instance of a cluster must
use the same key (the setting), or none can read the others' secrets."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

PREFIX = "whsec_"
SECRET_BYTES = 32
KEY_FILE = "webhooks.key"


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_bytes(secret: str) -> bytes:
    """The HMAC key of a `whsec_...` secret: its base64 part, decoded."""
    return base64.b64decode(secret.removeprefix(PREFIX))


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """One `v1,<base64>` signature of Standard Webhooks: HMAC-SHA256 of
    `id.timestamp.body` keyed by the secret's bytes."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def key_text(setting: str, data_dir: Path) -> str:
    """The text the encryption key derives from: the setting, else the key
    file of the data folder (made here, readable by its owner only)."""
    if setting:
        return setting
    path = data_dir / KEY_FILE
    try:
        return path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        pass
    # Written whole under another name, then linked into place: a worker
    # starting at the same moment reads either no file or the whole key.
    text = secrets.token_urlsafe(32)
    fd, temporary = tempfile.mkstemp(dir=data_dir, prefix=".webhooks-key-")  # made 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(text + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:  # another worker made it first: use theirs
            return path.read_text(encoding="ascii").strip()
    finally:
        os.unlink(temporary)
    return text


class Sealer:
    """Encrypts and decrypts secrets with the instance's key."""

    def __init__(self, key: str) -> None:
        # Fernet wants 32 url-safe base64 bytes; the setting is any long
        # random text, so it is stretched to that with SHA-256.
        derived = hashlib.sha256(b"quire webhooks\0" + key.encode()).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode("ascii")

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode()
        except InvalidToken:
            raise ValueError("the webhook secret cannot be decrypted: was [webhooks] key changed, "
                             "or do the instances use different keys?") from None
