"""Single sign-on over HTTP: a real OpenID provider (tests/oidc) and a real
`quire serve --workers 2` configured for it (api.md "Single sign-on",
"Single sign-on with OpenID Connect", "Back-channel logout"; behaviour.md §9).

Most tests share one stack per module (each xdist worker starts its own) and
use their own provider accounts, so no test depends on another's users or
sessions."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx2 as httpx
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from quire.app import Quire, build_app
from quire.config import load_settings
from quire.events import Events
from tests.client import TestClient
from tests.conftest import Api
from tests.sso.provider import LogoutReceiver, end_session, jwt_claims, login, logout_receiver
from tests.sso.stack import ACCOUNTS, CLIENT_ID, CLIENT_SECRET, Stack, sso_stack

BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout"
MISSING = {"error": "Missing configuration for sso"}

# The stack maps the role from realm_access/roles/0; its roles are admin
# (built in), editor and viewer. The shared stack allows admin and viewer.
USERS: dict[str, dict[str, Any]] = {
    **ACCOUNTS,
    "cat": {"email": "cat@example.com", "preferred_username": "  cat  ",
            "name": 'Cat <b>"Kitty"</b> O\'Hara', "realm_access": {"roles": ["viewer", "admin"]}},
    "fay": {"email": "fay@example.com", "preferred_username": "fay", "name": "Fay",
            "realm_access": {"roles": ["viewer"]}},
    "dan": {"email": "dan@example.com", "preferred_username": "dan", "name": "Dan",
            "realm_access": {"roles": ["viewer"]}},
    "nora": {"email": "nora@example.com", "preferred_username": "nora",
             "realm_access": {"roles": ["nosuchrole"]}},
    "mia": {"email": "mia@example.com", "preferred_username": "mia", "name": "Mia"},
    "ed": {"email": "ed@example.com", "preferred_username": "ed", "realm_access": {"roles": ["editor"]}},
}
ALLOWED = ["admin", "viewer"]


# -- helpers -----------------------------------------------------------------------


def query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def without_query(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def provider_callback(http: httpx.Client, stack: Stack, username: str, path: str = "/sso/authenticate") -> str:
    """Start a login at Quire and log in at the provider; the URL of the
    provider's redirect back to /sso/callback (not yet followed)."""
    started = http.get(stack.app + path)
    assert started.status_code == 303, started.text
    back = login(http, started.headers["location"], username)
    assert back.startswith(stack.app + "/sso/callback?"), back
    return back


def sso_login(http: httpx.Client, stack: Stack, username: str) -> httpx.Response:
    """A whole login: Quire's answer to the callback."""
    return http.get(provider_callback(http, stack, username))


def logged_in(http: httpx.Client, stack: Stack) -> bool:
    """Whether the client's session cookie still opens the admin."""
    response = http.get(stack.app + "/")
    if response.status_code == 303:
        assert response.headers["location"] == "/auth/login"
        return False
    assert response.status_code == 200, response.text
    return True


def error_message(page: str) -> str:
    match = re.search(r'<p class="error">([^<]*)</p>', page)
    assert match, page
    return match.group(1)


@contextlib.contextmanager
def open_quire(stack: Stack) -> Iterator[Quire]:
    """The services on the running server's data directory."""
    quire = Quire(load_settings(stack.data, env={}))
    try:
        yield quire
    finally:
        quire.close()


def sso_user(stack: Stack, sub: str) -> dict[str, Any] | None:
    with open_quire(stack) as quire:
        return quire.users.by_sso(stack.op.issuer, sub)


def log_count(stack: Stack, text: str) -> int:
    return stack.server_log().count(text)


def wait_for_log(stack: Stack, text: str, more_than: int = 0, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while log_count(stack, text) <= more_than:
        assert time.monotonic() < deadline, f"no new {text!r} in the server log:\n{stack.server_log()}"
        time.sleep(0.05)


def assert_json_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"]
    return str(body["error"])


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64json(value: dict[str, Any]) -> str:
    return b64(json.dumps(value).encode())


# -- module off and the login page: in-process, no provider needed -------------------


@contextlib.contextmanager
def local_client(tmp_path: Path, sso: dict[str, Any]) -> Iterator[TestClient]:
    settings = load_settings(tmp_path / "data", env={"QUIRE_SERVER_QUIET": "true"}, overrides={"sso": sso})
    app = build_app(settings, Events())
    try:
        yield TestClient(app, raise_server_exceptions=False)
    finally:
        app.state.quire.close()


ENDPOINTS = [("GET", "/sso/authenticate"), ("GET", "/sso/callback"), ("GET", "/sso/logout"),
             ("POST", "/sso/logout")]


@pytest.mark.parametrize("method,path", ENDPOINTS)
def test_module_off_answers_404_missing_configuration(anon: Api, method: str, path: str) -> None:
    response = anon.request(method, path + ("?state=s&code=c" if path == "/sso/callback" else ""),
                            data={"logout_token": "x.y.z"} if method == "POST" else None)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == MISSING


@pytest.mark.parametrize("sso", [{"provider_url": "http://127.0.0.1:9"}, {"client_id": "quire-admin"}],
                         ids=["no-client-id", "no-provider-url"])
def test_module_off_when_one_required_setting_is_missing(tmp_path: Path, sso: dict[str, Any]) -> None:
    with local_client(tmp_path, sso) as client:
        for method, path in ENDPOINTS:
            response = client.request(method, path)
            assert (response.status_code, response.json()) == (404, MISSING), (method, path)


@pytest.mark.parametrize("sso,button", [
    ({}, None),
    ({"provider_url": "http://127.0.0.1:9"}, None),
    ({"provider_url": "http://127.0.0.1:9", "client_id": "quire-admin"}, "Login via OAuth"),
    ({"provider_url": "http://127.0.0.1:9", "client_id": "quire-admin", "loginText": "Sign in with Example ID"},
     "Sign in with Example ID"),
    ({"provider_url": "http://127.0.0.1:9", "client_id": "quire-admin", "loginText": 'Use "Acme" <ID> & Co'},
     "Use &#34;Acme&#34; &lt;ID&gt; &amp; Co"),
], ids=["off", "half-configured", "default-text", "custom-text", "text-escaped"])
def test_login_page_shows_sso_button_only_when_configured(tmp_path: Path, sso: dict[str, Any],
                                                          button: str | None) -> None:
    with local_client(tmp_path, sso) as client:
        page = client.get("/auth/login")
    assert page.status_code == 200
    links = re.findall(r'<a class="button sso" href="/sso/authenticate">([^<]*)</a>', page.text)
    if button is None:
        assert "/sso/authenticate" not in page.text and "Login via OAuth" not in page.text
    else:
        assert links == [button]


# -- the shared stack ----------------------------------------------------------------


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with sso_stack(tmp_path_factory.mktemp("sso"), sso={"allowed_roles": ALLOWED}, accounts=USERS) as running:
        yield running


def test_authenticate_redirects_with_state_nonce_and_pkce(stack: Stack) -> None:
    with httpx.Client() as http:
        first = http.get(stack.app + "/sso/authenticate")
        second = http.get(stack.app + "/sso/authenticate")
    assert first.status_code == 303
    url = first.headers["location"]
    assert without_query(url) == stack.op.endpoint("authorization_endpoint")
    params = query(url)
    assert params["response_type"] == "code"
    assert params["client_id"] == CLIENT_ID
    assert params["redirect_uri"] == stack.app + "/sso/callback"
    assert params["scope"] == "openid profile email"
    assert params["code_challenge_method"] == "S256"
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", params["code_challenge"])  # base64url of a SHA-256
    assert len(params["state"]) >= 16 and len(params["nonce"]) >= 16
    assert params["state"] != params["nonce"]
    again = query(second.headers["location"])
    for name in ("state", "nonce", "code_challenge"):
        assert again[name] != params[name], name
    # The state is bound to this browser by a cookie for /sso/ only.
    cookie = first.headers["set-cookie"]
    assert cookie.startswith("quire_sso=") and "HttpOnly" in cookie and "Path=/sso/" in cookie
    assert "samesite=lax" in cookie.lower()


def test_authenticate_without_pkce_when_disabled(tmp_path: Path) -> None:
    with sso_stack(tmp_path, sso={"pkce": False}) as running, httpx.Client() as http:
        response = http.get(running.app + "/sso/authenticate")
    assert response.status_code == 303
    params = query(response.headers["location"])
    assert "code_challenge" not in params and "code_challenge_method" not in params
    assert params["state"] and params["nonce"] and params["client_id"] == CLIENT_ID


def test_login_creates_user_with_mapped_fields(stack: Stack) -> None:
    assert sso_user(stack, "cat") is None
    with httpx.Client() as http:
        response = sso_login(http, stack, "cat")
        assert response.status_code == 303 and response.headers["location"] == "/"
        assert "quire_session" in response.cookies
        assert logged_in(http, stack)
    with open_quire(stack) as quire:
        user = quire.users.by_sso(stack.op.issuer, "cat")
        assert user is not None
        sessions = quire.sessions.list_all(user["_id"])
        # the audit log: the user made at sign-on, then its login, both by the user
        audited = quire.store.collection("system/audit").find({"id": user["_id"]}, [(("at",), 1)])
    assert {k: user[k] for k in ("user", "email", "name", "role", "active")} == {
        "user": "cat",  # trimmed
        "email": "cat@example.com",
        "name": "Cat bKitty/b OHara",  # < > " ' stripped
        "role": "viewer",  # realm_access/roles/0
        "active": True,
    }
    assert "password" not in user
    assert [s["sso"] for s in sessions] == [user["_sso"]]
    assert user["_sso"]["iss"] == stack.op.issuer and user["_sso"]["sub"] == "cat"
    assert isinstance(user["_sso"]["sid"], str) and user["_sso"]["sid"]
    assert [(e["action"], e["who"]["kind"], e["who"]["id"]) for e in audited] == [
        ("user.create", "user", user["_id"]), ("login", "user", user["_id"])]
    assert audited[1]["detail"] == {"method": "sso"} and audited[1]["ip"]


def test_next_login_updates_the_same_user_and_nothing_else(stack: Stack) -> None:
    with httpx.Client() as http:
        assert sso_login(http, stack, "fay").status_code == 303
    with open_quire(stack) as quire:
        first = quire.users.by_sso(stack.op.issuer, "fay")
        assert first is not None
        # An administrator changes the mapped fields and sets a password.
        quire.users.update(first["_id"], {"name": "Renamed", "role": "editor", "password": "fay-password-1"})
    with httpx.Client() as http:  # a new provider session
        assert sso_login(http, stack, "fay").status_code == 303
    with open_quire(stack) as quire:
        again = quire.users.by_sso(stack.op.issuer, "fay")
        assert again is not None
        same_sub = [u for u in quire.users.list_all() if u.get("_sso", {}).get("sub") == "fay"]
        assert quire.users.verify_password("fay", "fay-password-1") is not None
    assert len(same_sub) == 1
    assert again["_id"] == first["_id"] and again["_created"] == first["_created"]
    assert (again["name"], again["role"]) == ("Fay", "viewer")  # mapped again from the claims
    assert (again["user"], again["email"], again["active"]) == ("fay", "fay@example.com", True)
    assert again["_sso"]["sid"] != first["_sso"]["sid"]  # the new provider session


@pytest.mark.parametrize("username,message", [
    ("eve", "Invalid email format"),
    ("nora", "Role does not exist"),
    ("mia", "Role does not exist"),  # no role claim and no default_role
    ("ed", "Role not allowed by configuration"),
], ids=["invalid-email", "role-not-existing", "role-missing", "role-not-allowed"])
def test_login_refused_with_api_message(stack: Stack, username: str, message: str) -> None:
    logged = log_count(stack, f"sso login failed: {message}")
    with httpx.Client() as http:
        response = sso_login(http, stack, username)
        assert response.status_code == 403
        assert response.headers["content-type"].startswith("text/html")
        assert error_message(response.text) == message
        assert "quire_session" not in response.cookies
        assert not logged_in(http, stack)
    assert sso_user(stack, username) is None
    wait_for_log(stack, f"sso login failed: {message}", logged)
    with open_quire(stack) as quire:
        failed = quire.store.collection("system/audit").find({"action": "login.failed"})
    assert {"user": "", "method": "sso", "reason": message} in [e["detail"] for e in failed]


def test_default_role_replaces_missing_nonexistent_and_not_allowed_roles(tmp_path: Path) -> None:
    sso = {"allowed_roles": ALLOWED, "default_role": "viewer"}
    with sso_stack(tmp_path, sso=sso, accounts=USERS) as running:
        for username in ("mia", "nora", "ed", "ann"):
            with httpx.Client() as http:
                response = sso_login(http, running, username)
                assert response.status_code == 303, (username, response.text)
                assert logged_in(http, running)
        roles = {name: (sso_user(running, name) or {}).get("role") for name in ("mia", "nora", "ed", "ann")}
    assert roles == {"mia": "viewer", "nora": "viewer", "ed": "viewer", "ann": "admin"}


def test_next_path_is_kept_only_when_local(stack: Stack) -> None:
    with httpx.Client() as http:
        back = provider_callback(http, stack, "ann", "/sso/authenticate?next=/admin/users")
        assert http.get(back).headers["location"] == "/admin/users"
    with httpx.Client() as http:
        back = provider_callback(http, stack, "ann", "/sso/authenticate?next=//evil.example.com/x")
        assert http.get(back).headers["location"] == "/"


def test_replayed_callback_fails(stack: Stack) -> None:
    with httpx.Client() as http:
        back = provider_callback(http, stack, "ann")
        assert http.get(back).status_code == 303
        again = http.get(back)
    assert again.status_code == 403
    assert "already used" in error_message(again.text)
    assert "quire_session" not in again.cookies


@pytest.mark.parametrize("own_login", [False, True], ids=["no-binding-cookie", "own-binding-cookie"])
def test_callback_in_another_client_fails(stack: Stack, own_login: bool) -> None:
    with httpx.Client() as victim, httpx.Client() as other:
        back = provider_callback(victim, stack, "ann")
        if own_login:
            assert other.get(stack.app + "/sso/authenticate").status_code == 303
        response = other.get(back)
        assert response.status_code == 403
        assert "another browser" in error_message(response.text)
        assert "quire_session" not in response.cookies
        assert not logged_in(other, stack)


@pytest.mark.parametrize("params", [
    {"state": "no-such-state", "code": "some-code"},
    {"code": "some-code"},
    {"state": "no-such-state"},
    {"error": "access_denied", "state": "no-such-state"},
], ids=["unknown-state", "no-state", "no-code", "provider-error"])
def test_callback_without_a_pending_login_fails(stack: Stack, params: dict[str, str]) -> None:
    with httpx.Client() as http:
        assert http.get(stack.app + "/sso/authenticate").status_code == 303  # a binding cookie
        response = http.get(stack.app + "/sso/callback?" + urlencode(params))
        assert response.status_code == 403
        assert response.headers["content-type"].startswith("text/html")
        assert "quire_session" not in response.cookies
    if params.get("code") and params.get("state"):
        assert "already used" in error_message(response.text)


def test_callback_from_another_issuer_fails(stack: Stack) -> None:
    with httpx.Client() as http:
        back = provider_callback(http, stack, "ann")
        forged = {**query(back), "iss": "http://127.0.0.1:9"}
        response = http.get(stack.app + "/sso/callback?" + urlencode(forged))
    assert response.status_code == 403
    assert "another identity provider" in error_message(response.text)


def test_get_logout_ends_session_and_redirects_to_provider(stack: Stack) -> None:
    with httpx.Client() as http:
        assert sso_login(http, stack, "ann").status_code == 303
        token = http.cookies["quire_session"]
        response = http.get(stack.app + "/sso/logout")
        assert response.status_code == 303
        target = response.headers["location"]
        assert "quire_session" not in http.cookies  # the cookie is cleared
        with httpx.Client() as old:  # and the session is gone on the server
            old.headers["cookie"] = f"quire_session={token}"
            assert not logged_in(old, stack)
        assert without_query(target) == stack.op.endpoint("end_session_endpoint")
        params = query(target)
        assert params["client_id"] == CLIENT_ID
        assert params["post_logout_redirect_uri"] == stack.app + "/auth/login"
        hint = jwt_claims(params["id_token_hint"])
        assert (hint["iss"], hint["aud"], hint["sub"]) == (stack.op.issuer, CLIENT_ID, "ann")
        # The provider accepts the hint and sends the browser back to the login page.
        assert end_session(http, target) == stack.app + "/auth/login"


def test_get_logout_without_session_goes_to_login_page(stack: Stack) -> None:
    with httpx.Client() as http:
        response = http.get(stack.app + "/sso/logout")
    assert response.status_code == 303 and response.headers["location"] == "/auth/login"


def test_backchannel_logout_from_provider_ends_all_sessions_of_the_subject(stack: Stack) -> None:
    accepted = log_count(stack, "back-channel logout accepted: 2 session(s) ended")
    with httpx.Client() as first, httpx.Client() as second, httpx.Client() as other:
        for http, username in ((first, "dan"), (second, "dan"), (other, "bob")):
            assert sso_login(http, stack, username).status_code == 303
            assert logged_in(http, stack)
        with open_quire(stack) as quire:
            dan = quire.users.by_sso(stack.op.issuer, "dan")
            assert dan is not None
            sids = {s["sso"]["sid"] for s in quire.sessions.list_all(dan["_id"])}
        assert len(sids) == 2  # two provider sessions: the second matches by sub only

        # The provider logs out the first browser and tells Quire over the back channel.
        end_session(first, stack.op.endpoint("end_session_endpoint") + f"?client_id={CLIENT_ID}")

        assert not logged_in(first, stack)
        assert not logged_in(second, stack)
        assert logged_in(other, stack)
    with open_quire(stack) as quire:
        assert quire.sessions.list_all(dan["_id"]) == []  # destroyed, not just flagged
        ended = quire.store.collection("system/audit").find({"action": "logout", "id": dan["_id"]})
    assert [e["detail"] for e in ended] == [{"reason": "backchannel"}] * 2
    assert {e["who"]["name"] for e in ended} == {"dan"}
    wait_for_log(stack, "back-channel logout accepted: 2 session(s) ended", accepted)


def forged_token(stack: Stack, how: str) -> str:
    now = int(time.time())
    claims = {"iss": stack.op.issuer, "aud": CLIENT_ID, "iat": now, "exp": now + 120,
              "jti": secrets.token_hex(8), "events": {BACKCHANNEL_EVENT: {}}, "sub": "ann"}
    provider_kid = "test-rs256"
    if how in ("own-key-provider-kid", "own-key-unknown-kid"):
        kid = provider_kid if how == "own-key-provider-kid" else "attacker-key"
        return jwt.encode({"alg": "RS256", "kid": kid}, claims, RSAKey.generate_key(2048))
    if how == "alg-none":
        return b64json({"alg": "none", "kid": provider_kid}) + "." + b64json(claims) + "."
    assert how == "hs256-with-public-key"
    (published,) = httpx.get(stack.op.endpoint("jwks_uri")).json()["keys"]
    pem = RSAKey.import_key(published).as_pem(private=False)
    signing_input = b64json({"alg": "HS256", "kid": provider_kid}) + "." + b64json(claims)
    return signing_input + "." + b64(hmac.new(pem, signing_input.encode(), hashlib.sha256).digest())


@pytest.mark.parametrize("how", ["own-key-provider-kid", "own-key-unknown-kid", "alg-none",
                                 "hs256-with-public-key"])
def test_forged_logout_token_is_refused_and_logged(stack: Stack, how: str) -> None:
    refused = log_count(stack, "sso back-channel logout refused")
    with httpx.Client() as http, httpx.Client() as attacker:
        assert sso_login(http, stack, "ann").status_code == 303
        response = attacker.post(stack.app + "/sso/logout", data={"logout_token": forged_token(stack, how)})
        assert_json_error(response, 400)
        assert response.headers["cache-control"] == "no-store"
        assert logged_in(http, stack)  # nobody was logged out
    wait_for_log(stack, "sso back-channel logout refused", refused)


@pytest.mark.parametrize("body", [None, {}, {"logout_token": ""}, {"token": "x.y.z"}],
                         ids=["no-body", "empty-form", "empty-token", "other-field"])
def test_logout_post_without_logout_token_is_400(stack: Stack, body: dict[str, str] | None) -> None:
    with httpx.Client() as http:
        if body is None:
            response = http.post(stack.app + "/sso/logout")
        else:
            response = http.post(stack.app + "/sso/logout", data=body)
    assert_json_error(response, 400)
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("shape", ["file-part", "many-fields"])
def test_logout_post_with_unusable_form_is_400(stack: Stack, shape: str) -> None:
    with httpx.Client() as http:
        if shape == "file-part":
            response = http.post(stack.app + "/sso/logout", files={"logout_token": ("t.jwt", b"x.y.z")})
        else:
            response = http.post(stack.app + "/sso/logout", data={f"f{i}": "x" for i in range(11)})
    assert_json_error(response, 400)
    assert response.headers["cache-control"] == "no-store"


def test_no_client_secret_in_the_server_log(stack: Stack) -> None:
    with httpx.Client() as http:
        assert sso_login(http, stack, "bob").status_code == 303  # a code exchange with the secret
    log = stack.server_log()
    assert "sso login of user" in log
    assert CLIENT_SECRET not in log
    assert base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode() not in log


# -- a provider that posts logout tokens to us, the test, instead of to Quire --------


@pytest.fixture(scope="module")
def receiver() -> Iterator[LogoutReceiver]:
    with logout_receiver() as server:
        yield server


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory, receiver: LogoutReceiver) -> Iterator[Stack]:
    with sso_stack(tmp_path_factory.mktemp("relay"), client={"backchannel_logout_uri": receiver.url},
                   accounts=USERS) as running:
        yield running


def captured_logout_token(http: httpx.Client, stack: Stack, receiver: LogoutReceiver) -> str:
    """Log the client's provider session out; the logout token the provider sent."""
    before = len(receiver.tokens)
    end_session(http, stack.op.endpoint("end_session_endpoint") + f"?client_id={CLIENT_ID}")
    assert len(receiver.tokens) == before + 1, stack.op.log()
    token = receiver.tokens[-1]
    claims = jwt_claims(token)
    assert claims["aud"] == CLIENT_ID and BACKCHANNEL_EVENT in claims["events"]
    return token


def test_valid_logout_token_ends_session_once_and_replay_is_refused(relay: Stack, receiver: LogoutReceiver) -> None:
    with httpx.Client() as http, httpx.Client() as provider:
        assert sso_login(http, relay, "ann").status_code == 303
        token = captured_logout_token(http, relay, receiver)
        assert logged_in(http, relay)  # Quire has not been told yet

        first = provider.post(relay.app + "/sso/logout", data={"logout_token": token})
        assert first.status_code == 200, first.text
        assert first.content == b""
        assert first.headers["cache-control"] == "no-store"
        assert not logged_in(http, relay)

        refused = log_count(relay, "sso back-channel logout refused")
        second = provider.post(relay.app + "/sso/logout", data={"logout_token": token})
        assert_json_error(second, 400)
        assert second.headers["cache-control"] == "no-store"
    wait_for_log(relay, "sso back-channel logout refused", refused)


def test_no_secret_or_token_in_the_server_log(relay: Stack, receiver: LogoutReceiver) -> None:
    with httpx.Client() as http, httpx.Client() as provider:
        assert sso_login(http, relay, "bob").status_code == 303
        token = captured_logout_token(http, relay, receiver)
        assert provider.post(relay.app + "/sso/logout", data={"logout_token": token}).status_code == 200
        assert provider.post(relay.app + "/sso/logout", data={"logout_token": token}).status_code == 400
        assert sso_login(http, relay, "bob").status_code == 303
        assert http.get(relay.app + "/sso/logout").status_code == 303  # with the ID token as hint
    wait_for_log(relay, "sso back-channel logout refused")
    log = relay.server_log()
    assert CLIENT_SECRET not in log
    assert token not in log and token.split(".")[2] not in log
    assert "eyJ" not in log  # no JWT at all: no ID token, no logout token
