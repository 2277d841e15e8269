"""Single sign-on with OpenID Connect: the authorization code flow (state,
nonce, PKCE), ID token and userinfo, claim mapping, users by (issuer,
subject), and back-channel logout.

A login in progress is a row of `sso/states` (state -> nonce, PKCE
verifier, where to go after), bound to the browser by a cookie whose hash
the row keeps, so any worker can finish it and a state cannot be replayed
or used by another browser. Logout token ids are kept in `sso/jti` for as
long as a token counts as fresh, so a replayed token is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from authlib.common.errors import AuthlibBaseError
from authlib.integrations.httpx_client import AsyncOAuth2Client

from quire.auth.service import AuthService
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.errors import BadRequest
from quire.sso import tokens
from quire.sso.mapping import MappingError, map_user
from quire.sso.provider import Provider, ProviderError
from quire.sso.settings import SsoSettings
from quire.store import Store

log = logging.getLogger("quire.sso")
STATES = "sso/states"
JTIS = "sso/jti"
STATE_TTL = 600  # seconds a login may take at the provider
LOGOUT_MESSAGE = "You have been logged out from another application."


class LoginFailed(Exception):
    """A login refused; the message is shown to the user (api.md's messages
    for mapping failures, plain words otherwise)."""


@dataclass
class Started:
    url: str
    binding: str  # the cookie value tying the state to this browser


@dataclass
class Finished:
    user: dict[str, Any]
    sso: dict[str, Any]
    id_token: str
    next: str


class SsoService:
    def __init__(self, store: Store, settings: SsoSettings, auth: AuthService, users: UserService,
                 sessions: SessionService) -> None:
        self.store = store
        self.settings = settings
        self.auth = auth
        self.users = users
        self.sessions = sessions
        self.provider = Provider(settings)
        self.states = store.collection(STATES)
        self.jtis = store.collection(JTIS)

    @property
    def configured(self) -> bool:
        return self.settings.configured

    def _client(self, redirect_uri: str, http_timeout: int | None = None) -> AsyncOAuth2Client:
        s = self.settings
        return AsyncOAuth2Client(
            client_id=s.client_id, client_secret=s.client_secret or None, scope=s.scopes,
            redirect_uri=redirect_uri, code_challenge_method=s.pkce_method,
            token_endpoint_auth_method="client_secret_basic" if s.client_secret else "none",
            timeout=http_timeout or s.timeout_seconds,
        )

    # -- login ------------------------------------------------------------

    async def start(self, redirect_uri: str, next_path: str) -> Started:
        meta = await self.provider.metadata()
        state, nonce, binding = secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(48) if self.settings.pkce_method else None
        async with self._client(redirect_uri) as client:
            url, _ = client.create_authorization_url(meta["authorization_endpoint"], state=state, nonce=nonce,
                                                     code_verifier=verifier)
        now = int(time.time())
        async with self.store.atomic():
            self.states.delete_many({"created": {"$lt": now - STATE_TTL}})
            self.states.insert({"_id": _digest(state), "nonce": nonce, "verifier": verifier,
                                "binding": _digest(binding), "next": next_path, "redirect_uri": redirect_uri,
                                "created": now})
        return Started(url, binding)

    async def finish(self, params: dict[str, str], binding: str | None) -> Finished:
        """The user of a provider's redirect to /sso/callback."""
        if "error" in params:
            raise LoginFailed(f"The identity provider refused the login: {params['error'][:100]}")
        state, code = params.get("state") or "", params.get("code") or ""
        if not state or not code:
            raise LoginFailed("The answer of the identity provider lacks state or code")
        async with self.store.atomic():
            pending = self.states.get(_digest(state))
            if pending is not None:
                self.states.delete(pending["_id"])  # one use only
        if pending is None or int(time.time()) - pending["created"] > STATE_TTL:
            raise LoginFailed("The login took too long or was already used; please start again")
        if not binding or not hmac.compare_digest(pending["binding"], _digest(binding)):
            raise LoginFailed("The login was started in another browser; please start again")
        meta = await self.provider.metadata()
        if params.get("iss") and params["iss"] != meta["issuer"]:
            raise LoginFailed("The answer came from another identity provider")
        token = await self._exchange(meta, pending, code)
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise LoginFailed("The identity provider sent no ID token")
        claims = await self._verified(id_token)
        try:
            tokens.check_id_token(claims, issuer=meta["issuer"], client_id=self.settings.client_id,
                                  nonce=pending["nonce"])
        except tokens.TokenError as exc:
            raise LoginFailed(str(exc)) from None
        userinfo = await self._userinfo(meta, token.get("access_token"), claims["sub"])
        merged = {**claims, **userinfo}
        try:
            fields = map_user(merged, self.settings, self.auth.role_exists)
        except MappingError as exc:
            raise LoginFailed(str(exc)) from None
        sid = claims.get("sid") if isinstance(claims.get("sid"), str) else None
        try:
            async with self.store.atomic():
                user = self.users.save_sso(meta["issuer"], claims["sub"], sid, fields)
        except BadRequest as exc:
            raise LoginFailed(exc.message) from None
        if not user.get("active", True):
            raise LoginFailed("This user is deactivated")
        return Finished(user, {"iss": meta["issuer"], "sub": claims["sub"], "sid": sid}, id_token,
                        pending["next"])

    async def _exchange(self, meta: dict[str, Any], pending: dict[str, Any], code: str) -> dict[str, Any]:
        try:
            async with self._client(pending["redirect_uri"]) as client:
                token = await client.fetch_token(meta["token_endpoint"], grant_type="authorization_code",
                                                 code=code, code_verifier=pending["verifier"])
        except (AuthlibBaseError, OSError, ValueError) as exc:
            raise LoginFailed(f"The code could not be exchanged for tokens: {exc}") from None
        except Exception as exc:  # httpx errors and the like
            raise LoginFailed(f"The token endpoint could not be reached: {exc.__class__.__name__}") from None
        return dict(token)

    async def _verified(self, token: str) -> dict[str, Any]:
        """Claims of a token signed by the provider; its keys are fetched
        again once when the token names a key id they lack."""
        try:
            return await self._signed_claims(token)
        except ProviderError as exc:
            raise LoginFailed(str(exc)) from None
        except tokens.TokenError as exc:
            raise LoginFailed(str(exc)) from None

    async def _signed_claims(self, token: str) -> dict[str, Any]:
        try:
            return tokens.decode(token, await self.provider.keys())
        except tokens.UnknownKeyError:
            return tokens.decode(token, await self.provider.keys(refresh=True))

    async def _userinfo(self, meta: dict[str, Any], access_token: Any, subject: str) -> dict[str, Any]:
        endpoint = meta.get("userinfo_endpoint")
        if not endpoint or not isinstance(access_token, str):
            return {}
        try:
            async with self.provider.client() as http:
                response = await http.get(endpoint, headers={"authorization": f"Bearer {access_token}"})
            info = response.json() if response.status_code == 200 else {}
        except Exception as exc:
            raise LoginFailed(f"The userinfo endpoint failed: {exc.__class__.__name__}") from None
        if not isinstance(info, dict):
            return {}
        if info.get("sub") != subject:
            raise LoginFailed("Userinfo is about another subject")
        return info

    # -- logout -----------------------------------------------------------

    async def end_session_url(self, id_token: str | None, after: str) -> str | None:
        """Where to send the browser for RP-initiated logout, if the
        provider offers it."""
        try:
            meta = await self.provider.metadata()
        except ProviderError as exc:
            log.warning("sso logout: provider not reachable: %s", exc)
            return None
        endpoint = meta.get("end_session_endpoint")
        if not isinstance(endpoint, str):
            return None
        query = {"client_id": self.settings.client_id, "post_logout_redirect_uri": after}
        if id_token:
            query["id_token_hint"] = id_token
        return endpoint + ("&" if "?" in endpoint else "?") + urlencode(query)

    async def backchannel_logout(self, logout_token: str) -> list[str]:
        """Check a logout token and end the sessions it names; their ids.
        tokens.TokenError or ProviderError when it is refused."""
        meta = await self.provider.metadata()
        claims = await self._signed_claims(logout_token)
        max_age = self.settings.logout_token_max_age_seconds
        tokens.check_logout_token(claims, issuer=meta["issuer"], client_id=self.settings.client_id,
                                  max_age=max_age)
        now = int(time.time())
        jti = _digest(f"{claims['iss']}|{claims['jti']}")
        event = {"type": "logout", "data": {"message": LOGOUT_MESSAGE}}
        async with self.store.atomic():
            if self.jtis.get(jti) is not None:
                raise tokens.TokenError("Logout token was already used")
            self.jtis.delete_many({"at": {"$lt": now - max_age - tokens.LEEWAY}})
            self.jtis.insert({"_id": jti, "at": now})
            ended = self.sessions.end_sso(claims["iss"], claims.get("sub"), claims.get("sid"), event)
        log.info("sso back-channel logout: %d session(s) ended (sub %s, sid %s)", len(ended),
                 "given" if claims.get("sub") else "absent", "given" if claims.get("sid") else "absent")
        return ended


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()
