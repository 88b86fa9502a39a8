"""Who sent an /api request (docs/people.md): the edge decides, never the request body.

In order: a bearer token (the server's `[server] api_token` is the admin token, the data
folder's `owner.key` the owner's, hub/people/owner_key.py; any other is looked up among the
people's own tokens), then the web session: its cookie together with its page key
(`X-Page-Key`, hub/people/credentials.py `page_key`). Nothing else: no request is anyone for where
it
comes from (a reverse proxy on the hub's machine makes every request a loopback one). A
credential that is given but not valid is refused (401), never passed over for the next rule.
"""

from __future__ import annotations

import hmac
import re

from starlette.datastructures import Headers

from hub.adapter import Caller, CallerKind
from hub.people.credentials import TOKEN_PREFIX, Access, page_key
from hub.people.identity import IdentityService

SESSION_COOKIE = "animahub_session"
PAGE_KEY_HEADER = "x-page-key"

# What a person's own token or session may reach; everything else under /api is for the
# owner and the admin token (memory of every scope, deliveries, people, Animas' creation).
_PERSON_ROUTES: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = tuple(
    (frozenset(methods.split()), re.compile(pattern))
    for methods, pattern in (
        ("GET", r"/api/me"),
        ("GET", r"/api/me/about"),
        ("GET", r"/api/me/handoffs"),
        ("POST", r"/api/me/forget"),
        ("POST", r"/api/signout"),
        ("GET", r"/api/animas(/[^/]+)?"),
        ("POST", r"/api/chat/[^/]+"),
        ("GET", r"/api/chat/[^/]+/history"),
        ("GET", r"/api/chat/[^/]+/conversations"),
        ("GET", r"/api/channels"),
        ("GET POST", r"/api/channels/[^/]+/posts"),
        ("GET", r"/api/dashboard/animas"),
        ("GET", r"/api/conversations"),  # their own only (hub/api/dashboard_routes.py)
        ("GET", r"/api/conversation"),
        # what a DM with them would recall (hub/api/memory_routes.py, memory_browser_routes.py)
        ("GET", r"/api/memory/[^/]+/(episodes|notes|graph|search|read)"),
        # their own messages, and sharing one of them (hub/api/share_routes.py)
        ("GET", r"/api/memory/[^/]+/mine"),
        ("POST", r"/api/memory/[^/]+/share"),
        ("GET", r"/api/stats"),  # their own messages (hub/api/insight_routes.py)
        ("GET POST DELETE", r"/mcp"),  # every tool answers within the caller's own rights
    )
)


class Unauthenticated(Exception):
    """No caller could be established: the edge answers 401 with this message."""

    def __init__(self, message: str, session_ended: bool = False) -> None:
        super().__init__(message)
        # The page's own session (its key matched) ended: the browser may forget the cookie.
        # Not otherwise: another port's page, without the key, must not sign anyone out.
        self.session_ended = session_ended


def session_cookies(headers: Headers) -> list[str]:
    """Every session cookie the request carries: a cookie planted from another port of the
    same host with another Path arrives beside the hub's own one, under the same name."""
    found = []
    for chunk in headers.get("cookie", "").split(";"):
        name, sep, value = chunk.partition("=")
        if sep and name.strip() == SESSION_COOKIE and value.strip():
            found.append(value.strip().strip('"'))
    return found


def session_secret(headers: Headers) -> str | None:
    """The session cookie whose page key the request carries (the one to sign out)."""
    given = headers.get(PAGE_KEY_HEADER, "")
    for secret in session_cookies(headers):
        if hmac.compare_digest(page_key(secret).encode(), given.encode()):
            return secret
    return None


class Authenticator:
    def __init__(
        self,
        admin_token: str | None,
        access: Access,
        identity: IdentityService,
        owner_key: str | None = None,
    ) -> None:
        self._admin = admin_token.encode() if admin_token is not None else None
        self._owner_key = owner_key.encode() if owner_key else None
        self._access = access
        self._identity = identity

    def caller(self, headers: Headers) -> Caller:
        authorization = headers.get("authorization")
        if authorization is not None:
            return self._bearer(authorization)
        cookies = session_cookies(headers)
        if cookies:
            return self._session(cookies, headers.get(PAGE_KEY_HEADER, ""))
        raise Unauthenticated("missing bearer token or sign-in (see docs/people.md)")

    def _session(self, cookies: list[str], given: str) -> Caller:
        """The session whose page key came with the request; the cookie alone is nobody."""
        for secret in cookies:
            if given and hmac.compare_digest(page_key(secret).encode(), given.encode()):
                found = self._access.session_person(secret)
                if found is None:
                    ended = "this session has ended (signed out, revoked or expired)"
                    raise Unauthenticated(ended, session_ended=True)
                person_id, owners = found
                owner = self._identity.owner()
                if owners and person_id == owner.id:
                    return Caller(owner.id, owner.display_name, CallerKind.OWNER)
                return self._as(person_id, CallerKind.SESSION)
        raise Unauthenticated(
            "this browser's session is not this page's: sign in again with a sign-in link"
        )

    def _bearer(self, authorization: str) -> Caller:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("send Authorization: Bearer <token>")
        if self._admin is not None and hmac.compare_digest(token.encode(), self._admin):
            owner = self._identity.owner()
            return Caller(owner.id, owner.display_name, CallerKind.ADMIN_TOKEN)
        if self._owner_key is not None and hmac.compare_digest(token.encode(), self._owner_key):
            owner = self._identity.owner()
            return Caller(owner.id, owner.display_name, CallerKind.OWNER)
        # Anything but a person's token is refused without asking the database.
        person_id = self._access.token_person(token) if token.startswith(TOKEN_PREFIX) else None
        if person_id is None:
            raise Unauthenticated("missing or wrong bearer token")
        return self._as(person_id, CallerKind.TOKEN)

    def _as(self, person_id: str, kind: CallerKind) -> Caller:
        person = self._identity.by_id(person_id)
        return Caller(person.id, person.display_name, kind)


def permitted(caller: Caller, method: str, path: str) -> bool:
    if caller.may_act_for_others:
        return True
    method = "GET" if method == "HEAD" else method
    return any(method in methods and pattern.fullmatch(path) for methods, pattern in _PERSON_ROUTES)
