"""`WS /ws`: the live feed (hub/live.py) for the dashboard, within the caller's rights.

A browser cannot set headers on a WebSocket, so the caller is established from what the
handshake carries (an Authorization header, from a client that can set one) or, failing
that, from the first frame: `{"token": "..."}` (a person's token, the owner's or the admin
token) or `{"page_key": "..."}`, which with the handshake's session cookie is the session
(hub/api/auth.py: the cookie alone is nobody). A handshake from another site's page is
refused: cookies ride along with it (cross-site WebSocket hijacking).

Frames the hub sends are JSON: `{"type": "hello", "name", "admin"}` once, then notices
(`{"type": "turn" | "anima" | "delivery" | "task" | "platform" | "resync", ...}`), and
`{"type": "ping"}` when nothing happened for a while; the credential is checked again
then, so a revoked session or token stops receiving within `RECHECK_S` (close code 4401).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Collection, Sequence

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from sqlalchemy.exc import DBAPIError
from starlette.datastructures import Headers

from hub.adapter import Caller
from hub.api.auth import Authenticator, Unauthenticated
from hub.api.guard import origin_allowed
from hub.app import Hub

log = logging.getLogger(__name__)
PATH = "/ws"
RECHECK_S = 30.0  # a ping, and the credential asked again, after this long without news
TOKEN_WAIT_S = 10.0  # how long a handshake without credentials may take to send its token
UNAUTHENTICATED = 4401  # close codes in the private range: the HTTP status they stand for
FORBIDDEN = 4403


def add(
    app: FastAPI,
    hub: Hub,
    authenticator: Authenticator,
    own_hosts: Sequence[str],
    cors_origins: Collection[str],
) -> None:
    async def live(socket: WebSocket) -> None:
        origin = socket.headers.get("origin")
        host = socket.headers.get("host", "")
        if origin is not None and not origin_allowed(origin, host, own_hosts, cors_origins):
            await socket.close(FORBIDDEN, f"cross-site connection from {origin} refused")
            return
        await socket.accept()
        found = await _caller(socket, authenticator)
        if found is None:
            return
        caller, credential = found
        admin = caller.may_act_for_others
        await socket.send_json({"type": "hello", "name": caller.name, "admin": admin})
        await _relay(socket, hub, lambda: _still(authenticator, credential, caller), caller)

    app.add_api_websocket_route(PATH, live)


async def _caller(socket: WebSocket, authenticator: Authenticator) -> tuple[Caller, Headers] | None:
    """Who is connected and by which credential, or None once the socket was closed for
    want of one."""
    try:
        return authenticator.caller(socket.headers), socket.headers
    except Unauthenticated:
        pass  # the token may come in the first frame
    try:
        first = json.loads(await asyncio.wait_for(socket.receive_text(), TOKEN_WAIT_S))
        token, key = first.get("token"), first.get("page_key")
    except (TimeoutError, ValueError, AttributeError, WebSocketDisconnect):
        token = key = None
    if isinstance(token, str) and token:
        credential = Headers({"authorization": f"Bearer {token}"})
    elif isinstance(key, str) and key:
        credential = Headers({"cookie": socket.headers.get("cookie", ""), "x-page-key": key})
    else:
        await _close(socket, UNAUTHENTICATED, 'send {"token": "..."} first (docs/dashboard.md)')
        return None
    try:
        return authenticator.caller(credential), credential
    except Unauthenticated as exc:
        await _close(socket, UNAUTHENTICATED, str(exc))
        return None


async def _relay(
    socket: WebSocket, hub: Hub, still_valid: Callable[[], bool], caller: Caller
) -> None:
    admin = caller.may_act_for_others
    ids = hub.identity.ids_of(caller.person_id)
    # The browser sends nothing more; reading is how a closed tab is noticed at once.
    closed = asyncio.ensure_future(_until_closed(socket))
    try:
        with hub.live.watcher() as watcher:
            while not closed.done():
                got = asyncio.ensure_future(watcher.next(RECHECK_S))
                await asyncio.wait((got, closed), return_when=asyncio.FIRST_COMPLETED)
                if closed.done():
                    got.cancel()
                    return
                notice = got.result()
                if notice is None:
                    if not still_valid():
                        await _close(socket, UNAUTHENTICATED, "the credential has ended")
                        return
                    await socket.send_json({"type": "ping"})
                elif notice.visible_to(ids, admin):
                    await socket.send_json(notice.as_json())
    except WebSocketDisconnect:
        return
    finally:
        closed.cancel()


async def _until_closed(socket: WebSocket) -> None:
    try:
        while True:
            await socket.receive_text()
    except WebSocketDisconnect:
        return


def _still(authenticator: Authenticator, credential: Headers, caller: Caller) -> bool:
    """The connection's credential still names the same person (not signed out, revoked
    or expired since)."""
    try:
        again = authenticator.caller(credential)
    except Unauthenticated:
        return False
    except DBAPIError:
        return True  # the database is away: nothing new is learned, keep the connection
    return again.person_id == caller.person_id


async def _close(socket: WebSocket, code: int, reason: str) -> None:
    log.info("live feed connection closed: %s", reason)
    await socket.close(code, reason[:120])  # a close frame's reason holds 123 bytes
