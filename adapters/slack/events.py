"""Slack's two ways in, both through slack-bolt: the Events API and Socket Mode.

What arrives over HTTP is verified by the route before Bolt sees it (verify.py: v0
HMAC-SHA256 of `v0:{ts}:{body}` with the signing secret, timestamp within five minutes, else
401; a signed body that is not a request Slack would send, 400), then by Bolt, which
answers Slack's `url_verification` challenge and skips our shared bot's own events.
With `process_before_response=True` an event is acknowledged only once the hub has stored
it (normalizing and persisting take milliseconds; cached user lookups aside), so a crash can
never lose an event Slack believes delivered. If that ever takes longer than Slack's three
seconds, Slack redelivers (`X-Slack-Retry-Num`) and the hub's dedup answers it once. Slash
commands are acknowledged with their answer when the hub gives it within two seconds, else
acknowledged at once and answered through the command's `response_url`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import call
from adapters.slack.verify import body_problem, signature_problem
from hub.adapter import (
    DeliveryError,
    PermanentDeliveryError,
    PlatformUnauthorized,
    PlatformUnavailable,
)

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"
ACK_BUDGET_S = 2.0  # of Slack's 3 s for a slash command's acknowledgement
WORKING = "Working on it…"
FAILED = "Sorry, the hub could not take that command; the reason is in its log."

OnEvent = Callable[[dict[str, Any]], Awaitable[None]]
OnCommand = Callable[[dict[str, Any]], Awaitable[str]]


def build_app(
    client: AsyncWebClient, signing_secret: str, on_event: OnEvent, on_command: OnCommand
) -> AsyncApp:
    app = AsyncApp(
        client=client,
        signing_secret=signing_secret,
        process_before_response=True,
        name="animahub-slack",
        logger=logging.getLogger("adapters.slack.bolt"),
    )
    late: set[asyncio.Future[None]] = set()  # answers still on their way (kept referenced)

    async def event_listener(ack: AsyncAck, body: dict[str, Any]) -> None:
        await on_event(body)  # stored by the hub before Slack hears "received"
        await ack()

    async def command_listener(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        work = asyncio.ensure_future(on_command(body))
        done, _ = await asyncio.wait({work}, timeout=ACK_BUDGET_S)
        if done:
            failure = work.exception()
            if failure is not None:  # told to the person, then logged by Bolt
                await ack(text=FAILED, response_type="ephemeral")
                raise failure
            await ack(text=work.result(), response_type="ephemeral")
            return
        await ack(text=WORKING, response_type="ephemeral")
        # The listener returns now so the acknowledgement goes out; the answer follows.
        finishing = asyncio.ensure_future(_answer_later(work, respond))
        late.add(finishing)
        finishing.add_done_callback(late.discard)

    app.event("message")(event_listener)
    app.event("app_mention")(event_listener)
    app.command(re.compile(r"^/"))(command_listener)
    return app


async def _answer_later(work: asyncio.Future[str], respond: AsyncRespond) -> None:
    try:
        reply = await work
    except Exception:
        log.exception("a Slack slash command failed")
        await respond(text=FAILED, response_type="ephemeral")
        return
    await respond(text=reply, response_type="ephemeral")


def events_router(
    app: AsyncApp,
    signing_secret: str,
    not_ready: Callable[[], str | None],
    clock: Callable[[], float] = time.time,
) -> APIRouter:
    """`POST /slack/events`: the Request URL for events, and for slash commands over HTTP.
    Verified and checked here first (verify.py), then handed to Bolt. `not_ready`: why the
    adapter cannot take events now (None: it can)."""
    handler = AsyncSlackRequestHandler(app)

    async def slack_events(request: Request) -> Response:
        body = await request.body()  # Starlette keeps it: Bolt reads the same bytes
        headers = request.headers
        refused = signature_problem(
            signing_secret,
            body,
            headers.get("X-Slack-Request-Timestamp"),
            headers.get("X-Slack-Signature"),
            clock(),
        )
        if refused is not None:
            log.warning("refused a Slack request: %s", refused)
            return JSONResponse({"detail": refused}, status_code=401)
        malformed = body_problem(headers.get("Content-Type", ""), body)
        if malformed is not None:
            log.warning("refused a signed Slack request: %s", malformed)
            return JSONResponse({"detail": malformed}, status_code=400)
        # Not acknowledged, so Slack delivers it again (three times, within the hour). Not
        # taken before the start worked: Bolt would answer 200 for a token Slack refuses.
        why = not_ready()
        if why is not None:
            return JSONResponse({"detail": why}, status_code=503)
        return await handler.handle(request)

    router = APIRouter()
    router.add_api_route(EVENTS_PATH, slack_events, methods=["POST"], include_in_schema=False)
    return router


class SocketMode:
    """A Socket Mode connection (`xapp-` token): Slack pushes events over a WebSocket, so the
    hub needs no public URL. The SDK client reconnects by itself when the socket drops."""

    def __init__(self, app: AsyncApp, app_token: str, client: AsyncWebClient) -> None:
        self._app = app
        self._token = app_token
        self._client = client
        self._handler: AsyncSocketModeHandler | None = None
        self._connecting: asyncio.Task[None] | None = None

    async def start(self) -> None:
        # Asked once here so a wrong app token fails the start with Slack's error, instead
        # of the SDK retrying it in the background forever; the URL is then used to connect.
        try:
            opened = await call(
                "apps.connections.open", self._client.apps_connections_open(app_token=self._token)
            )
        except PermanentDeliveryError as exc:
            raise PlatformUnauthorized(f"Slack refused slack.app_token: {exc}") from exc
        except DeliveryError as exc:
            raise PlatformUnavailable(f"Slack Socket Mode cannot connect: {exc}") from exc
        handler = AsyncSocketModeHandler(self._app, self._token, web_client=self._client)
        handler.client.wss_uri = str(opened["url"])
        self._handler = handler
        connect = handler.connect_async()  # type: ignore[no-untyped-call]
        self._connecting = asyncio.create_task(connect, name="slack-socket")

    async def stop(self) -> None:
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
        if self._connecting is not None:
            await asyncio.gather(self._connecting, return_exceptions=True)
        if self._handler is not None:
            await self._handler.close_async()  # type: ignore[no-untyped-call]
        self._handler = self._connecting = None
