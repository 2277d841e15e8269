"""One e-mail check serves admin users, single sign-on, form recipients and
reply-to addresses, so they all accept and refuse the same addresses."""

from __future__ import annotations

import pytest

from quire.app import Quire
from quire.emails import normal_email
from quire.errors import BadRequest


@pytest.mark.parametrize("address", ["a..b@example.com", "a@-bad.com", "a@corp.local", "a@[1.2.3.4]",
                                     "ann@example", "<ann@example.com>", "ann@example.com\n", None, 42])
def test_refused_everywhere(address: object) -> None:
    assert normal_email(address) is None


def test_domain_is_lower_cased() -> None:
    assert normal_email("Ann@Example.COM") == "Ann@example.com"


@pytest.mark.parametrize("address", ["a..b@example.com", "a@-bad.com"])
def test_admin_users_use_the_same_check_as_forms(quire: Quire, address: str) -> None:
    with pytest.raises(BadRequest, match="^Invalid email format$"):
        quire.users.create({"user": "carl", "email": address, "role": "admin", "password": "long enough"})
    assert quire.users.by_name("carl") is None
