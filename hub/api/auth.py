"""Who sent an /api request (docs/people.md): the edge decides, never the request body.

In order: a bearer token (the server's `[server] api_token` is the admin token; any other is
looked up among the people's own tokens), then the web session cookie, then, on a loopback
hub without an API token, no credentials at all: the owner at their own machine. A
credential that is given but not valid is refused (401), never passed over for the next rule.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import cookie_parser

from hub.access import TOKEN_PREFIX, Access, csrf_token
from hub.adapter import Caller, CallerKind
from hub.identity import IdentityService

SESSION_COOKIE = "animahub_session"
CSRF_HEADER = "x-csrf-token"

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
        ("GET", r"/api/chat/[^/]+/sessions"),
        ("GET", r"/api/channels"),
        ("GET POST", r"/api/channels/[^/]+/posts"),
        ("GET", r"/api/dashboard/animas"),
        ("GET", r"/api/conversations"),  # their own only (hub/api/dashboard_routes.py)
        ("GET", r"/api/conversation"),
        # what a DM with them would recall (hub/api/memory_routes.py, memory_browser_routes.py)
        ("GET", r"/api/memory/[^/]+/(episodes|notes|graph|search|read)"),
        ("GET", r"/api/stats"),  # their own messages (hub/api/insight_routes.py)
        ("GET POST DELETE", r"/mcp"),  # every tool answers within the caller's own rights
    )
)


class Unauthenticated(Exception):
    """No caller could be established: the edge answers 401 with this message."""


def is_loopback_peer(client: Any) -> bool:
    if not client:
        return False
    try:
        return ipaddress.ip_address(client[0]).is_loopback
    except ValueError:  # a Unix socket's path or a test client's made-up name
        return False


def session_secret(headers: Headers) -> str | None:
    return cookie_parser(headers.get("cookie", "")).get(SESSION_COOKIE) or None


class Authenticator:
    def __init__(self, admin_token: str | None, access: Access, identity: IdentityService) -> None:
        self._admin = admin_token.encode() if admin_token is not None else None
        self._access = access
        self._identity = identity

    def caller(self, headers: Headers, client: Any) -> Caller:
        authorization = headers.get("authorization")
        if authorization is not None:
            return self._bearer(authorization)
        secret = session_secret(headers)
        if secret is not None:
            person_id = self._access.session_person(secret)
            if person_id is None:
                raise Unauthenticated("this session has ended (signed out, revoked or expired)")
            return self._as(person_id, CallerKind.SESSION, csrf_token(secret))
        if self._admin is None and is_loopback_peer(client):
            owner = self._identity.owner()
            return Caller(owner.id, owner.display_name, CallerKind.OWNER)
        raise Unauthenticated("missing bearer token or sign-in (see docs/people.md)")

    def _bearer(self, authorization: str) -> Caller:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("send Authorization: Bearer <token>")
        if self._admin is not None and hmac.compare_digest(token.encode(), self._admin):
            owner = self._identity.owner()
            return Caller(owner.id, owner.display_name, CallerKind.ADMIN_TOKEN)
        # Anything but a person's token is refused without asking the database.
        person_id = self._access.token_person(token) if token.startswith(TOKEN_PREFIX) else None
        if person_id is None:
            raise Unauthenticated("missing or wrong bearer token")
        return self._as(person_id, CallerKind.TOKEN)

    def _as(self, person_id: str, kind: CallerKind, csrf: str = "") -> Caller:
        person = self._identity.by_id(person_id)
        return Caller(person.id, person.display_name, kind, csrf)


def permitted(caller: Caller, method: str, path: str) -> bool:
    if caller.may_act_for_others:
        return True
    method = "GET" if method == "HEAD" else method
    return any(method in methods and pattern.fullmatch(path) for methods, pattern in _PERSON_ROUTES)


def csrf_ok(caller: Caller, headers: Mapping[str, str]) -> bool:
    """A cookie rides along with any request the browser makes, so a session's unsafe
    requests must also prove they come from the hub's own page."""
    if caller.kind is not CallerKind.SESSION:
        return True
    given = headers.get(CSRF_HEADER, "")
    return hmac.compare_digest(given.encode(), caller.csrf_token.encode())
