"""`WS /ws`: the live feed (hub/live.py) for the dashboard, within the caller's rights.

A browser cannot set headers on a WebSocket, so the caller is established from what the
handshake carries (an Authorization header, from a client that can set one) or, failing
that, from the first frame: `{"token": "..."}` (a person's token, the owner's or the admin
token) or `{"page_key": "..."}`, which with the handshake's session cookie is the session
(hub/api/auth.py: the cookie alone is nobody). A handshake from another site's page is
refused: cookies ride along with it (cross-site WebSocket hijacking).

Frames the hub sends are JSON: `{"type": "hello", "name", "admin"}` once, `{"type":
"history", "since", "notices"}` once (the latest notices the caller may see, each with its
`at`, kept since `since`: hub/live.py), then notices
(`{"type": "turn" | "anima" | "delivery" | "task" | "platform" | "resync", ...}`), and
`{"type": "ping"}` when nothing happened for a while; the credential is checked again
then, so a revoked session or token stops receiving within `RECHECK_S` (close code 4401).

A socket must authenticate within `[server] handshake_timeout_s`; one person may hold
`live_per_person` sockets and one client address `live_per_address`, all of them together
half of `max_connections` (close code 4429 past any of them). Until it authenticates, a
socket holds no place among the connections (hub/api/connections.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager, suppress

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from sqlalchemy.exc import DBAPIError
from starlette.datastructures import Headers

from hub.adapter import Caller
from hub.api.auth import Authenticator, Unauthenticated
from hub.api.connections import connection_of
from hub.api.guard import origin_allowed
from hub.app import Hub
from hub.settings import ServerSection

log = logging.getLogger(__name__)
PATH = "/ws"
RECHECK_S = 30.0  # a ping, and the credential asked again, after this long without news
UNAUTHENTICATED = 4401  # close codes in the private range: the HTTP status they stand for
FORBIDDEN = 4403
TOO_MANY = 4429


class Seats:
    """The live-feed sockets open now, by person and by client address."""

    def __init__(self, server: ServerSection) -> None:
        self.per_person = server.live_per_person
        self.per_address = server.live_per_address
        self.total = max(1, server.max_connections // 2)
        self.people: dict[str, int] = {}
        self.addresses: dict[str, int] = {}

    def refusal(self, person: str, address: str) -> str | None:
        if self.people.get(person, 0) >= self.per_person:
            return f"{self.per_person} live connections are open for you already"
        if self.addresses.get(address, 0) >= self.per_address:
            return f"{self.per_address} live connections are open from your address already"
        if sum(self.people.values()) >= self.total:
            return "the hub holds all the live connections it may; try again later"
        return None

    @contextmanager
    def taken(self, person: str, address: str) -> Iterator[None]:
        self.people[person] = self.people.get(person, 0) + 1
        self.addresses[address] = self.addresses.get(address, 0) + 1
        try:
            yield
        finally:
            for counts, key in ((self.people, person), (self.addresses, address)):
                counts[key] -= 1
                if not counts[key]:
                    del counts[key]


def add(
    app: FastAPI,
    hub: Hub,
    authenticator: Authenticator,
    own_hosts: Sequence[str],
    cors_origins: Collection[str],
) -> None:
    seats = Seats(hub.settings.server)
    deadline_s = hub.settings.server.handshake_timeout_s

    async def live(socket: WebSocket) -> None:
        try:
            await serve(socket)
        except WebSocketDisconnect:
            return  # gone mid-handshake, or closed at the deadline: nothing went wrong here

    async def serve(socket: WebSocket) -> None:
        origin = socket.headers.get("origin")
        host = socket.headers.get("host", "")
        if origin is not None and not origin_allowed(origin, host, own_hosts, cors_origins):
            await socket.close(FORBIDDEN, f"cross-site connection from {origin} refused")
            return
        await socket.accept()
        found = await _caller(socket, authenticator, deadline_s)
        if found is None:
            return
        caller, credential = found
        address = socket.client.host if socket.client else "?"
        refused = seats.refusal(caller.person_id, address)
        if refused is not None:
            await _close(socket, TOO_MANY, refused)
            return
        conn = connection_of(socket.scope)
        if conn is not None and not conn.live():  # authenticated: a shared place now
            await _close(socket, TOO_MANY, "the hub is serving all it may; try again later")
            return
        with seats.taken(caller.person_id, address):
            admin = caller.may_act_for_others
            await socket.send_json({"type": "hello", "name": caller.name, "admin": admin})
            still = lambda: _still(authenticator, credential, caller)  # noqa: E731
            await _relay(socket, hub, still, caller)

    app.add_api_websocket_route(PATH, live)


async def _caller(
    socket: WebSocket, authenticator: Authenticator, deadline_s: float
) -> tuple[Caller, Headers] | None:
    """Who is connected and by which credential, or None once the socket was closed for
    want of one."""
    try:
        return authenticator.caller(socket.headers), socket.headers
    except Unauthenticated:
        pass  # the token may come in the first frame
    try:
        first = json.loads(await asyncio.wait_for(socket.receive_text(), deadline_s))
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
            # What happened before the page opened, as it may see it; then live. No await
            # between the watcher and `recent`: no notice is missed or told twice.
            past = hub.live.recent(ids, admin)
            since = hub.live.since.isoformat()
            await socket.send_json({"type": "history", "since": since, "notices": past})
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
    log.debug("live feed connection closed: %s", reason)  # debug: a flood must not flood the log
    # Gone already (closed at the deadline before authentication, or by the client): fine.
    with suppress(WebSocketDisconnect):
        await socket.close(code, reason[:120])  # a close frame's reason holds 123 bytes
