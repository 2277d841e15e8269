"""Unit tests of the SSO token checks (quire.sso.tokens) and of the claim
mapping (quire.sso.mapping), with keys made here: no provider, no server."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import replace
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, OctKey, RSAKey

from quire.sso.mapping import MappingError, claim_at, map_user
from quire.sso.settings import SsoSettings
from quire.sso.tokens import (
    BACKCHANNEL_EVENT,
    LEEWAY,
    TokenError,
    UnknownKeyError,
    check_id_token,
    check_logout_token,
    decode,
)

ISSUER = "https://op.example.com"
CLIENT = "quire-admin"
NOW = 1_700_000_000
MAX_AGE = 300
DROP = object()  # a claim value meaning "leave this claim out"


# -- keys and tokens ---------------------------------------------------------------


@pytest.fixture(scope="module")
def key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "op-key", "alg": "RS256"})


@pytest.fixture(scope="module")
def other_key() -> RSAKey:
    """Another key that claims the provider's key id."""
    return RSAKey.generate_key(2048, parameters={"kid": "op-key", "alg": "RS256"})


@pytest.fixture(scope="module")
def keys(key: RSAKey) -> KeySet:
    """The provider's published keys: the public half only."""
    return KeySet([RSAKey.import_key(key.as_dict(private=False))])


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64json(value: dict[str, Any]) -> str:
    return b64(json.dumps(value).encode())


def sign(claims: dict[str, Any], key: RSAKey | OctKey, alg: str = "RS256", kid: str | None = "op-key") -> str:
    header = {"alg": alg} | ({"kid": kid} if kid else {})
    return jwt.encode(header, claims, key)


def with_changes(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = {**base, **changes}
    return {k: v for k, v in out.items() if v is not DROP}


# -- decode ------------------------------------------------------------------------


def test_decode_returns_claims_of_a_good_signature(key: RSAKey, keys: KeySet) -> None:
    claims = {"iss": ISSUER, "sub": "ann", "n": [1, 2]}
    assert decode(sign(claims, key), keys) == claims


def test_decode_without_kid_uses_the_only_key(key: RSAKey, keys: KeySet) -> None:
    assert decode(sign({"sub": "ann"}, key, kid=None), keys) == {"sub": "ann"}


def test_decode_refuses_a_signature_by_another_key(other_key: RSAKey, keys: KeySet) -> None:
    token = sign({"sub": "ann"}, other_key)  # same kid, other key
    with pytest.raises(TokenError) as caught:
        decode(token, keys)
    assert not isinstance(caught.value, UnknownKeyError)


def test_decode_refuses_alg_none(keys: KeySet) -> None:
    token = b64json({"alg": "none", "kid": "op-key"}) + "." + b64json({"sub": "ann"}) + "."
    with pytest.raises(TokenError):
        decode(token, keys)


def test_decode_refuses_hs256_even_with_a_shared_key_in_the_set(key: RSAKey) -> None:
    secret = OctKey.generate_key(256, parameters={"kid": "shared"})
    token = sign({"sub": "ann"}, secret, alg="HS256", kid="shared")
    with pytest.raises(TokenError):
        decode(token, KeySet([key, secret]))


def test_decode_refuses_hs256_keyed_with_the_public_key(key: RSAKey, keys: KeySet) -> None:
    """The algorithm-confusion attack: HMAC with the published RSA key as secret."""
    signing_input = b64json({"alg": "HS256", "kid": "op-key"}) + "." + b64json({"sub": "admin"})
    pem = key.as_pem(private=False)
    mac = hmac.new(pem, signing_input.encode(), hashlib.sha256).digest()
    with pytest.raises(TokenError):
        decode(signing_input + "." + b64(mac), keys)


def test_decode_unknown_kid_raises_unknown_key_error(key: RSAKey, keys: KeySet) -> None:
    with pytest.raises(UnknownKeyError):
        decode(sign({"sub": "ann"}, key, kid="rotated-key"), keys)


@pytest.mark.parametrize("token", ["", "garbage", "a.b.c", "a.b"])
def test_decode_refuses_malformed_tokens(keys: KeySet, token: str) -> None:
    with pytest.raises(TokenError):
        decode(token, keys)


# -- ID token ----------------------------------------------------------------------

ID_TOKEN = {"iss": ISSUER, "aud": CLIENT, "sub": "ann", "nonce": "n-1", "iat": NOW, "exp": NOW + 300}


def check_id(**changes: Any) -> None:
    check_id_token(with_changes(ID_TOKEN, changes), issuer=ISSUER, client_id=CLIENT, nonce="n-1", now=NOW)


@pytest.mark.parametrize("changes", [
    {},
    {"aud": [CLIENT]},
    {"aud": [CLIENT, "other"], "azp": CLIENT},
    {"exp": NOW - LEEWAY + 1},  # expired, but within the clock leeway
    {"iat": NOW + LEEWAY - 1},  # issued a little in the future: clock leeway
    {"sid": "s-1", "name": "Ann"},  # more claims are fine
], ids=["plain", "aud-list", "azp-several-aud", "exp-leeway", "iat-leeway", "extra-claims"])
def test_id_token_accepted(changes: dict[str, Any]) -> None:
    check_id(**changes)


@pytest.mark.parametrize("changes,words", [
    ({"iss": "https://evil.example.com"}, "issuer"),
    ({"iss": DROP}, "issuer"),
    ({"aud": "other"}, "audience"),
    ({"aud": ["other", "third"]}, "audience"),
    ({"aud": DROP}, "audience"),
    ({"aud": [CLIENT, "other"]}, "authorized party"),  # several audiences and no azp
    ({"aud": [CLIENT, "other"], "azp": "other"}, "authorized party"),
    ({"exp": NOW - LEEWAY - 1}, "expired"),
    ({"exp": DROP}, "expired"),
    ({"exp": "tomorrow"}, "expired"),
    ({"iat": NOW + LEEWAY + 1}, "future"),
    ({"iat": DROP}, "future"),
    ({"nonce": "n-2"}, "nonce"),
    ({"nonce": DROP}, "nonce"),
    ({"sub": DROP}, "subject"),
    ({"sub": ""}, "subject"),
    ({"sub": 42}, "subject"),
], ids=["iss-wrong", "iss-missing", "aud-wrong", "aud-list-without-us", "aud-missing", "azp-missing",
        "azp-wrong", "exp-passed", "exp-missing", "exp-not-number", "iat-future", "iat-missing",
        "nonce-mismatch", "nonce-missing", "sub-missing", "sub-empty", "sub-not-string"])
def test_id_token_refused(changes: dict[str, Any], words: str) -> None:
    with pytest.raises(TokenError, match=words):
        check_id(**changes)


# -- logout token (api.md "Back-channel logout", plus behaviour.md §9) --------------

LOGOUT_TOKEN = {"iss": ISSUER, "aud": CLIENT, "iat": NOW, "exp": NOW + 120, "jti": "jti-1",
                "events": {BACKCHANNEL_EVENT: {}}, "sub": "ann", "sid": "sid-1"}


def check_logout(**changes: Any) -> None:
    check_logout_token(with_changes(LOGOUT_TOKEN, changes), issuer=ISSUER, client_id=CLIENT,
                       max_age=MAX_AGE, now=NOW)


@pytest.mark.parametrize("changes", [
    {},
    {"sub": DROP},  # only sid
    {"sid": DROP},  # only sub
    {"aud": [CLIENT, "other"]},
    {"exp": DROP},  # exp is optional
    {"iat": NOW - MAX_AGE + 1},
    {"iat": NOW + LEEWAY - 1},
    {"events": {BACKCHANNEL_EVENT: {}, "https://example.com/other-event": {}}},
], ids=["both", "only-sid", "only-sub", "aud-list", "no-exp", "iat-old-but-fresh", "iat-leeway",
        "more-events"])
def test_logout_token_accepted(changes: dict[str, Any]) -> None:
    check_logout(**changes)


@pytest.mark.parametrize("claim", ["iss", "aud", "iat", "events"])
def test_logout_token_needs_each_required_claim(claim: str) -> None:
    with pytest.raises(TokenError, match=claim):
        check_logout(**{claim: DROP})


@pytest.mark.parametrize("events", [
    {},
    {"http://schemas.openid.net/event/other": {}},
    [BACKCHANNEL_EVENT],  # a list is not the events object
    BACKCHANNEL_EVENT,
], ids=["empty", "other-event", "list", "string"])
def test_logout_token_needs_the_backchannel_event(events: Any) -> None:
    with pytest.raises(TokenError, match="event"):
        check_logout(events=events)


@pytest.mark.parametrize("changes", [
    {"sub": DROP, "sid": DROP},
    {"sub": "", "sid": ""},
    {"sub": None, "sid": None},
], ids=["absent", "empty", "null"])
def test_logout_token_needs_sub_or_sid(changes: dict[str, Any]) -> None:
    with pytest.raises(TokenError, match="sub"):
        check_logout(**changes)


def test_logout_token_must_not_carry_a_nonce() -> None:
    with pytest.raises(TokenError, match="nonce"):
        check_logout(nonce="n-1")


@pytest.mark.parametrize("changes,words", [
    ({"iss": "https://evil.example.com"}, "issuer"),
    ({"aud": "other-client"}, "audience"),
    ({"aud": ["other-client"]}, "audience"),
    ({"iat": NOW - MAX_AGE - 1}, "fresh"),
    ({"iat": NOW + LEEWAY + 1}, "fresh"),
    ({"iat": "yesterday"}, "fresh"),
    ({"exp": NOW - LEEWAY - 1}, "expired"),
    ({"jti": DROP}, "jti"),
    ({"jti": ""}, "jti"),
], ids=["iss-wrong", "aud-wrong", "aud-list-without-us", "iat-too-old", "iat-future", "iat-not-number",
        "exp-passed", "jti-missing", "jti-empty"])
def test_logout_token_refused(changes: dict[str, Any], words: str) -> None:
    with pytest.raises(TokenError, match=words):
        check_logout(**changes)


def test_logout_token_signed_and_checked_end_to_end(key: RSAKey, keys: KeySet) -> None:
    claims = decode(sign(LOGOUT_TOKEN, key), keys)
    check_logout_token(claims, issuer=ISSUER, client_id=CLIENT, max_age=MAX_AGE, now=NOW)


# -- claim paths -------------------------------------------------------------------

CLAIMS: dict[str, Any] = {
    "email": "ann@example.com",
    "realm_access": {"roles": ["admin", "offline_access"]},
    "org": {"unit": {"name": "Docs", "zero": 0, "off": False}},
    "teams": [{"name": "red"}, {"name": "blue"}],
}


@pytest.mark.parametrize("path,expected", [
    ("email", "ann@example.com"),
    ("org/unit/name", "Docs"),
    ("org/unit/zero", 0),
    ("org/unit/off", False),
    ("org/unit", {"name": "Docs", "zero": 0, "off": False}),
    ("realm_access/roles", ["admin", "offline_access"]),
    ("realm_access/roles/0", "admin"),
    ("realm_access/roles/1", "offline_access"),
    ("teams/1/name", "blue"),
    ("/realm_access/roles/0", "admin"),  # a leading slash is ignored
    ("realm_access/roles/0/", "admin"),  # and so is a trailing one
], ids=lambda v: str(v))
def test_claim_at_finds(path: str, expected: Any) -> None:
    assert claim_at(CLAIMS, path) == expected


@pytest.mark.parametrize("path", [
    "missing",
    "org/missing/name",
    "realm_access/roles/2",  # out of range
    "realm_access/roles/99",
    "realm_access/roles/first",  # not a number on a list
    "realm_access/roles/-1",
    "realm_access/roles/ 0",
    "email/0",  # into a string
    "org/unit/name/x",
    "org//unit",
    "",
])
def test_claim_at_gives_none(path: str) -> None:
    assert claim_at(CLAIMS, path) is None


def test_claim_at_non_ascii_digit_on_a_list_gives_none() -> None:
    assert claim_at(CLAIMS, "realm_access/roles/²") is None


# -- mapping -----------------------------------------------------------------------

ROLES = {"admin", "editor", "viewer"}


def role_exists(role: str) -> bool:
    return role in ROLES


def settings(**changes: Any) -> SsoSettings:
    """SsoSettings at its defaults with these changes (a `mapping` change is
    merged into the default mapping, as quire.toml's is)."""
    default = SsoSettings()
    mapping = {**default.mapping, **changes.pop("mapping", {})}
    return replace(default, mapping=mapping, **{k: tuple(v) if isinstance(v, list) else v for k, v in changes.items()})


USER = {"sub": "ann", "email": "ann@example.com", "preferred_username": "ann", "name": "Ann Example",
        "groups": ["editor"]}


def mapped(claims: dict[str, Any] | None = None, **setting_changes: Any) -> dict[str, Any]:
    return map_user(USER if claims is None else claims, settings(**setting_changes), role_exists)


def test_default_mapping() -> None:
    assert mapped() == {"email": "ann@example.com", "user": "ann", "name": "Ann Example", "role": "editor"}


def test_role_from_a_string_claim_by_path() -> None:
    claims = {**USER, "realm_access": {"roles": ["viewer", "admin"]}}
    assert mapped(claims, mapping={"role": "realm_access/roles/0"})["role"] == "viewer"
    assert mapped(claims, mapping={"role": "realm_access/roles/1"})["role"] == "admin"


def test_role_from_a_list_claim_is_its_first_usable_role() -> None:
    assert mapped({**USER, "groups": ["viewer", "admin"]})["role"] == "viewer"
    assert mapped({**USER, "groups": ["nosuchrole", 7, "admin"]})["role"] == "admin"


@pytest.mark.parametrize("role", ["nosuchrole", "Editor", "editor ", "edi tor", "editor\n", "", ["nosuchrole"], []],
                         ids=repr)
def test_role_does_not_exist(role: Any) -> None:
    with pytest.raises(MappingError) as caught:
        mapped({**USER, "groups": role})
    assert str(caught.value) == "Role does not exist"


def test_missing_role_without_default_fails() -> None:
    claims = {k: v for k, v in USER.items() if k != "groups"}
    with pytest.raises(MappingError) as caught:
        mapped(claims)
    assert str(caught.value) == "Role does not exist"


def test_role_not_allowed_by_configuration() -> None:
    with pytest.raises(MappingError) as caught:
        mapped(allowed_roles=["viewer", "admin"])
    assert str(caught.value) == "Role not allowed by configuration"
    assert mapped({**USER, "groups": ["viewer"]}, allowed_roles=["viewer"])["role"] == "viewer"


def test_nonexistent_role_is_not_reported_as_not_allowed() -> None:
    with pytest.raises(MappingError) as caught:
        mapped({**USER, "groups": "nosuchrole"}, allowed_roles=["viewer"])
    assert str(caught.value) == "Role does not exist"


@pytest.mark.parametrize("claims", [
    {**USER, "groups": DROP},
    {**USER, "groups": "nosuchrole"},
    {**USER, "groups": ["editor"]},  # exists, but not allowed
], ids=["missing", "nonexistent", "not-allowed"])
def test_default_role_replaces_a_missing_or_unusable_role(claims: dict[str, Any]) -> None:
    claims = {k: v for k, v in claims.items() if v is not DROP}
    fields = mapped(claims, allowed_roles=["viewer", "admin"], default_role="viewer")
    assert fields["role"] == "viewer"


def test_default_role_does_not_replace_a_usable_role() -> None:
    assert mapped(default_role="viewer")["role"] == "editor"


def test_default_role_that_does_not_exist_is_refused() -> None:
    with pytest.raises(MappingError, match="^Role does not exist$"):
        mapped({**USER, "groups": "nosuchrole"}, default_role="nosuchdefault")


@pytest.mark.parametrize("email", [
    "not-an-email", "ann@", "@example.com", "ann@example", "ann example@example.com", "ann@@example.com",
    'a"nn@example.com', "<ann@example.com>", "", None, 42, ["ann@example.com"],
], ids=repr)
def test_invalid_email_format(email: Any) -> None:
    with pytest.raises(MappingError) as caught:
        mapped({**USER, "email": email})
    assert str(caught.value) == "Invalid email format"


def test_missing_email_is_invalid_email_format() -> None:
    claims = {k: v for k, v in USER.items() if k != "email"}
    with pytest.raises(MappingError, match="^Invalid email format$"):
        mapped(claims)


def test_email_with_trailing_newline_is_invalid() -> None:
    with pytest.raises(MappingError, match="^Invalid email format$"):
        mapped({**USER, "email": "ann@example.com\n"})


def test_email_mapped_from_another_claim() -> None:
    claims = {**USER, "email": "not-an-email", "upn": {"mail": "ann.work@example.com"}}
    assert mapped(claims, mapping={"email": "upn/mail"})["email"] == "ann.work@example.com"


def test_name_is_stripped_of_dangerous_characters() -> None:
    claims = {**USER, "name": ' Ann <script>alert("x\'s")</script> `Ex`\\ample\x00 '}
    name = mapped(claims)["name"]
    assert name == "Ann scriptalert(xs)/script Example"
    assert not set(name) & set("<>\"'`\\\x00")


def test_name_falls_back_to_the_user_name() -> None:
    claims = {k: v for k, v in USER.items() if k != "name"}
    assert mapped(claims)["name"] == "ann"
    assert mapped({**USER, "name": "<>"})["name"] == "ann"  # nothing left after stripping
    assert mapped({**USER, "name": ["Ann"]})["name"] == "ann"  # not text


@pytest.mark.parametrize("char", ["<", ">", '"', "'"])
def test_user_name_with_blocked_character_is_refused(char: str) -> None:
    with pytest.raises(MappingError):
        mapped({**USER, "preferred_username": f"an{char}n"})


def test_user_name_is_trimmed() -> None:
    assert mapped({**USER, "preferred_username": "  ann  "})["user"] == "ann"


@pytest.mark.parametrize("user", [DROP, None, ""], ids=["missing", "null", "empty"])
def test_user_falls_back_to_the_email(user: Any) -> None:
    claims = {k: v for k, v in {**USER, "preferred_username": user}.items() if v is not DROP}
    fields = mapped(claims)
    assert fields["user"] == "ann@example.com"
    assert fields["email"] == "ann@example.com"


@pytest.mark.parametrize("null", [None, ""], ids=["None", "empty-string"])
def test_null_mapping_reads_no_claim(null: Any) -> None:
    claims = {**USER, "groups": ["admin"]}
    # role: not read, so the default role applies even though the claim names admin
    assert mapped(claims, mapping={"role": null}, default_role="viewer")["role"] == "viewer"
    with pytest.raises(MappingError, match="^Role does not exist$"):
        mapped(claims, mapping={"role": null})
    # user and name: not read, so the fallbacks apply
    fields = mapped(claims, mapping={"user": null, "name": null})
    assert (fields["user"], fields["name"]) == ("ann@example.com", "ann@example.com")
    # email: not read, so there is no e-mail address
    with pytest.raises(MappingError, match="^Invalid email format$"):
        mapped(claims, mapping={"email": null})
