"""Talking to a hub from the CLI: over HTTP to a running hub, or to an in-process one.

Both paths go through the same HTTP routes; in-process, the requests travel over an ASGI
transport instead of a socket, while this process holds the data root's lock.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from httpx_sse import aconnect_sse

from hub.cli.runfile import hold_data_root, hold_database, running_hub
from hub.messages import DeliveryStatus, clean_text
from hub.people.owner_key import read_owner_key

if TYPE_CHECKING:
    from hub.app import Hub
    from hub.settings import Settings

_DRAIN_TIMEOUT_S = 30.0
T = TypeVar("T")


def auth_headers(settings: Settings) -> dict[str, str]:
    """The CLI's credential: the admin token if this shell has it, else the data folder's
    owner key (hub/people/owner_key.py), which only the hub's OS user can read. Being on the hub's
    machine proves nothing by itself."""
    token = settings.server.api_token
    secret = token.get_secret_value() if token else read_owner_key(settings.home)
    return {"Authorization": f"Bearer {secret}"} if secret else {}


def through_hub(
    settings: Settings,
    work: Callable[[httpx.AsyncClient], Awaitable[T]],
    calls_the_model: bool = False,
) -> T:
    """`work` done with a client of the hub (`hub_client`), from synchronous CLI code."""
    from hub.cli.console import run_async

    async def run() -> T:
        async with hub_client(settings, calls_the_model) as client:
            return await work(client)

    return run_async(run())


@asynccontextmanager
async def hub_client(
    settings: Settings, calls_the_model: bool = False
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the running hub, else of an in-process one. `calls_the_model`: the
    command will (a chat, a heartbeat), so an in-process hub starts its model worker with
    its own start, for litellm's import to overlap it, instead of at the first call."""
    running = running_hub(settings.home)
    if running is not None:
        async with httpx.AsyncClient(
            base_url=running.url, headers=auth_headers(settings), timeout=None
        ) as client:
            yield client
        return
    # The whole hub, imported only when no hub runs: a command a running hub serves needs
    # httpx alone (bench/startup.py).
    from hub.api.server import create_app
    from hub.app import Hub
    from hub.logs import to_files

    with (
        hold_data_root(settings.home),
        hold_database(settings.database_url),
        to_files(settings.home),
    ):
        hub = Hub(settings, for_a_command=True)
        app = create_app(hub)
        async with app.router.lifespan_context(app):  # the hub's start and stop
            if calls_the_model and hub.model_workers is not None and hub.uses_a_model():
                hub.model_workers.start()
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport,
                base_url="http://localhost",  # a Host the hub answers to (hub/api/guard.py)
                headers=auth_headers(settings),
                timeout=None,
            ) as client:
                yield client
            await _drain(hub)


async def _drain(hub: Hub) -> None:
    """Let the outbox send what this command produced before the in-process hub stops."""
    from sqlmodel import select

    from hub.store.models import DeliveryRow

    loop = asyncio.get_running_loop()
    deadline = loop.time() + _DRAIN_TIMEOUT_S
    while loop.time() < deadline:
        hub.outbox.dispatch_due()
        with hub.db.session() as session:
            pending = session.exec(
                select(DeliveryRow.id).where(DeliveryRow.status == DeliveryStatus.PENDING).limit(1)
            ).first()
        if pending is None:
            return
        await asyncio.sleep(0.05)


class ChatFailed(Exception):
    pass


async def stream_chat(
    client: httpx.AsyncClient, anima: str, payload: dict[str, str]
) -> AsyncGenerator[str, None]:
    """Yield the reply's text pieces; raise ChatFailed with the hub's message on an error.
    A terminal's undecodable bytes arrive as surrogates (surrogateescape): each becomes
    U+FFFD here, as for every message from a platform (hub/messages.py `clean_text`)."""
    payload = {key: clean_text(value) for key, value in payload.items()}
    async with aconnect_sse(client, "POST", f"/api/chat/{anima}", json=payload) as source:
        if source.response.status_code != 200:
            await source.response.aread()
            raise ChatFailed(refusal_line(source.response))
        async for sse in source.aiter_sse():
            event = json.loads(sse.data)
            if event["type"] == "text":
                yield event["text"]
            elif event["type"] == "error":
                raise ChatFailed(event.get("message", "unknown error"))
            elif event["type"] in ("waiting", "delayed") and event.get("message"):
                # The model is slow or failing; the reply still comes in this stream. Said
                # beside it (stderr), so a script reading the reply reads only the reply.
                print(event["message"], file=sys.stderr, flush=True)
            elif event["type"] == "done":
                return


def refusal_line(response: httpx.Response) -> str:
    """A hub's refusal as a CLI prints it: the hub's words, then the HTTP status."""
    return f"{refusal(response)} (HTTP {response.status_code})"


# What a CLI without a credential is told: the hub's own words point a browser at sign-in,
# which a command line cannot do.
NEEDS_TOKEN = (
    "the hub needs a credential: run this as the OS user who owns the data folder (it reads "
    "owner.key there), or set ANIMAHUB_SERVER__API_TOKEN in this shell to the hub's "
    "[server] api_token"
)


def refusal(response: httpx.Response) -> str:
    """What a hub's error answer says: its `detail`, for a request that failed validation
    each field with its problem ("limit: Input should be greater than or equal to 1")."""
    if response.status_code == 401 and not _sent_credentials(response):
        return NEEDS_TOKEN
    try:
        body = response.json()
    except json.JSONDecodeError:
        return response.text
    detail = body.get("detail", response.text) if isinstance(body, dict) else body
    if isinstance(detail, list):  # FastAPI's validation errors: where, after query/body
        return "; ".join(
            f"{'.'.join(str(part) for part in error.get('loc', ())[1:])}: {_said(error)}"
            if isinstance(error, dict)
            else str(error)
            for error in detail
        )
    return str(detail)


def _sent_credentials(response: httpx.Response) -> bool:
    try:
        headers = response.request.headers
    except RuntimeError:  # a response made without a request: nothing was sent
        return False
    return "authorization" in headers or "cookie" in headers


def _said(error: dict[str, Any]) -> str:
    """A validation error's message, without pydantic's "Value error, " before our words."""
    return str(error.get("msg")).removeprefix("Value error, ")
