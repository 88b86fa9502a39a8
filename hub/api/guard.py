"""The hub's HTTP edge: security headers, request body limits, Host and cross-site checks.

Layers, outermost first (`hub/api/server.py` stacks them):
- `Edge`, outside Starlette's ServerErrorMiddleware, so even a 500 carries the security
  headers; it also refuses a declared Content-Length over `[server] max_body_bytes`, and
  marks the connection busy while a request is served (hub/api/connections.py).
- FastAPI's own body limit (`max_body_size`, Starlette's RequestBodyLimitMiddleware) counts
  the bytes as they stream in, chunked bodies too; `secure` makes its 413 name the setting.
- TrustedHostMiddleware: the Host header must be one the hub answers to (DNS rebinding).
- CORSMiddleware, only when `[server] cors_origins` names origins.
- `ApiGuard` on /api/* and /mcp: who the caller is (`hub/api/auth.py`: a token, or the session
  cookie with its page key, which also makes a session's requests proof against CSRF) and
  whether they may reach the route; then unsafe methods from another site and non-JSON
  bodies are refused (a cross-site page can send those without a CORS preflight).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Sequence
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub.adapter import Caller
from hub.api.auth import SESSION_COOKIE, Authenticator, Unauthenticated, permitted
from hub.api.connections import connection_of
from hub.settings import ServerSection, is_loopback

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# The web chat (adapters/web/static) loads only its own script and stylesheet, sets styles
# through the CSSOM (allowed without 'unsafe-inline'), uses a data: favicon and fetches the
# API on its own origin.
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# /docs and /redoc (hub/api/docs_pages.py): FastAPI's inline bootstrap script and style, the
# assets from the hub itself, ReDoc's blob: worker. Only these paths get it; they take no input.
DOCS_CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; worker-src blob:; connect-src 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
# Features the hub's pages never use, denied to them and to anything they might embed.
PERMISSIONS_POLICY = "camera=(), microphone=(), geolocation=(), payment=(), usb=()"
HSTS = "max-age=31536000"  # a year, no includeSubDomains: other hosts of the domain are not ours


def security_headers(https: bool) -> list[tuple[str, str]]:
    """Headers every response carries, apart from its Content-Security-Policy."""
    headers = [
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
        ("Permissions-Policy", PERMISSIONS_POLICY),
    ]
    if https:  # over plain http a browser ignores it, and it would pin a name to https
        headers.append(("Strict-Transport-Security", HSTS))
    return headers


def too_large(limit: int) -> JSONResponse:
    return JSONResponse(
        {"detail": f"request body over {limit} bytes ([server] max_body_bytes)"},
        status_code=413,
    )


class Edge:
    """Adds the security headers to every HTTP response, and refuses a body whose declared
    length is over the limit before anything reads it."""

    def __init__(self, app: ASGIApp, server: ServerSection, docs_paths: Collection[str]) -> None:
        self.app = app
        self.limit = server.max_body_bytes
        common = security_headers(server.https)
        self._page = [*common, ("Content-Security-Policy", PAGE_CSP)]
        self._docs = [*common, ("Content-Security-Policy", DOCS_CSP)]
        self._docs_paths = frozenset(docs_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = self._docs if scope["path"] in self._docs_paths else self._page

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in extra:
                    if name not in headers:  # a route's own choice wins
                        headers.append(name, value)
            await send(message)

        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit:
            # Answered here, as JSON: Starlette's limiter would answer such a request in
            # plain text. A chunked body is counted by that limiter as it arrives.
            await too_large(self.limit)(scope, receive, send_secured)
            return
        conn = connection_of(scope)  # its place in the budget (hub/api/connections.py)
        if conn is None:
            await self.app(scope, receive, send_secured)
            return
        if not conn.busy():  # a request is served: it takes one of the shared places
            await _busy()(scope, receive, send_secured)
            return
        try:
            await self.app(scope, receive, send_secured)
        finally:
            conn.idle()


class ApiGuard:
    """/api/* and /mcp: who the caller is, whether they may reach the route, and no unsafe request
    from another site.

    A browser sends a cross-site POST without asking first (no CORS preflight) when it has
    no body or a form/text body; a session's requests are safe from it (they need the
    `X-Page-Key` header, which needs a preflight and the key), and the Origin header and a
    JSON-only body refuse such requests from anyone else."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        own_hosts: Sequence[str],
        cors_origins: Collection[str],
        body_limit: int,
    ) -> None:
        self.app = app
        self._body_limit = body_limit
        self._authenticator = authenticator
        self._own_hosts = tuple(own_hosts)
        self._cors_origins = frozenset(cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path.startswith("/api/") or path == "/mcp"):
            headers = Headers(scope=scope)
            try:
                caller = self._authenticator.caller(headers)
            except Unauthenticated as exc:
                await _unauthenticated(str(exc), exc.session_ended)(scope, receive, send)
                return
            except DBAPIError as exc:  # looking a token up needs the database
                log.error("request refused: the database is unavailable (%s)", exc.orig)
                await _no_database()(scope, receive, send)
                return
            refusal = self._refusal(caller, scope["method"], scope["path"], headers)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
            scope.setdefault("state", {})["caller"] = caller
            if scope["method"] not in SAFE_METHODS and headers.get("content-type"):
                await self._json_text_checked(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _json_text_checked(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuses (422) a JSON body whose text holds a lone UTF-16 surrogate ("\\ud800"):
        Python's JSON parser accepts one, and nothing after it can encode it (a 500
        before). The body is read here, then handed on as it came."""
        messages: list[Message] = []
        try:
            while True:
                message = await receive()
                messages.append(message)
                if message["type"] != "http.request" or not message.get("more_body", False):
                    break
        except HTTPException as exc:  # Starlette's body limiter, outside the app's handlers
            if exc.status_code != 413:
                raise
            await too_large(self._body_limit)(scope, receive, send)
            return
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        if lone_surrogate(body):
            await _unencodable()(scope, receive, send)
            return
        replay = iter(messages)

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)

    def _refusal(
        self, caller: Caller, method: str, path: str, headers: Headers
    ) -> JSONResponse | None:
        if not permitted(caller, method, path):
            return JSONResponse(
                {"detail": f"{method} {path} is for the hub's owner and the admin token"},
                status_code=403,
            )
        if method in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, headers.get("host", "")):
            return JSONResponse(
                {"detail": f"cross-site request from {origin} refused"}, status_code=403
            )
        content_type = headers.get("content-type")
        if content_type is not None and not _is_json(content_type):
            return JSONResponse(
                {"detail": f"send application/json, not {content_type}"}, status_code=415
            )
        return None

    def _origin_allowed(self, origin: str, host: str) -> bool:
        return origin_allowed(origin, host, self._own_hosts, self._cors_origins)


def origin_allowed(
    origin: str, host: str, own_hosts: Sequence[str], cors_origins: Collection[str]
) -> bool:
    """Whether a browser's Origin is the hub's own page (or a configured CORS origin)."""
    if origin in cors_origins:
        return True
    parts = urlsplit(origin)  # "null" (sandboxed frames, file://) has no netloc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    if parts.netloc.lower() == host.lower():
        return True  # the hub's own page
    # Behind a proxy that rewrites Host, the page's origin is a name in allowed_hosts.
    name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return any(_host_matches(name, pattern) for pattern in own_hosts)


def _unauthenticated(detail: str, session_ended: bool) -> JSONResponse:
    response = JSONResponse(
        {"detail": detail}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
    )
    if session_ended:
        response.delete_cookie(SESSION_COOKIE, path="/")  # the page's own, ended: forget it
    return response


def _no_database() -> JSONResponse:
    return JSONResponse(
        {"detail": "the hub's database is unavailable; nothing was stored, try again"},
        status_code=503,
        headers={"Retry-After": "5"},
    )


# A \uD800-\uDFFF escape, the only way a JSON body carries a surrogate (raw UTF-8 cannot).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def lone_surrogate(body: bytes) -> bool:
    """Whether a JSON body's strings hold a surrogate no encoder takes (a pair escaped
    as two \\u escapes is one character once parsed, and fine)."""
    if not _SURROGATE_ESCAPE.search(body):
        return False
    try:
        parsed = json.loads(body)
    except ValueError:
        return False  # not JSON: the route's own validation answers it
    try:
        json.dumps(parsed, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


def _unencodable() -> JSONResponse:
    return JSONResponse(
        {
            "detail": "the text holds a lone UTF-16 surrogate (such as \\ud800), which is not "
            "a character; send the text as UTF-8 or with complete surrogate pairs"
        },
        status_code=422,
    )


def _busy() -> JSONResponse:
    return JSONResponse(
        {"detail": "the hub is serving all the requests it may ([server] max_connections)"},
        status_code=503,
        headers={"Retry-After": "5"},
    )


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _host_matches(host: str, pattern: str) -> bool:
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def trusted_hosts(server: ServerSection) -> list[str]:
    """The Host values the hub answers to. On loopback, only loopback names, the bound
    address and the configured names: a page whose name was rebound to 127.0.0.1 must not
    be same-origin with the hub (its sign-in page, its cookies). Elsewhere the API token
    guards it: any, unless set."""
    if not is_loopback(server.host) and not server.allowed_hosts:
        return ["*"]
    bound = f"[{server.host}]" if ":" in server.host else server.host.lower()
    return list(dict.fromkeys([*LOOPBACK_HOSTS, bound, *server.allowed_hosts]))


def secure(app: FastAPI, server: ServerSection, authenticator: Authenticator) -> None:
    """Adds the inner layers to `app` (Edge is added by the app's own middleware stack)."""
    app.add_middleware(
        ApiGuard,
        authenticator=authenticator,
        own_hosts=server.allowed_hosts,
        cors_origins=server.cors_origins,
        body_limit=server.max_body_bytes,
    )
    if server.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=server.cors_origins,
            allow_methods=("GET", "POST"),
            allow_headers=("Authorization", "Content-Type"),
            # Other sites' pages use a bearer token; the session cookie is for the hub's own.
            allow_credentials=False,
        )
    app.add_middleware(
        TrustedHostMiddleware, allowed_hosts=trusted_hosts(server), www_redirect=False
    )
    limit = server.max_body_bytes

    async def body_too_large(_request: Request, _exc: Exception) -> JSONResponse:
        return too_large(limit)

    # Starlette's limiter raises HTTPException(413) when a streamed body passes the limit;
    # nothing else in the hub raises one.
    app.add_exception_handler(413, body_too_large)
