"""The one check of an e-mail address, for admin users, single sign-on
claims, form recipients and a submission's reply-to.

It is the `email-validator` package's syntax check (RFC 5321/5322 with the
usual real-world limits: no quoted local part, no display name, at most 254
characters, a dotted domain); the domain is not looked up. Intranet
domains pass (`corp.internal`, `x.test`: identity providers and form
recipients inside a company use them); the names reserved against mail
(`.local`, `localhost`, `.invalid`, `.onion`, `.arpa`) do not.
"""

from __future__ import annotations

from typing import Any

from email_validator import EmailNotValidError, validate_email


def normal_email(address: Any) -> str | None:
    """The address in normal form (domain lower-cased), or None when it is
    not a valid address."""
    if not isinstance(address, str):
        return None
    try:
        return str(validate_email(address, check_deliverability=False, test_environment=True).normalized)
    except EmailNotValidError:
        return None
