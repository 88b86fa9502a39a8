"""The Minichat adapter: the smallest adapter that passes the contract (docs/adapters.md).

It takes from the hub only its adapter contract (`hub.adapter`) and the message model
(`hub.messages`), as every adapter does. Minichat's API: `GET /me` checks the bot token,
`POST /messages` posts (429 with Retry-After when too fast), and people's messages arrive as
webhooks signed with HMAC-SHA256 of the body (`X-Minichat-Signature: sha256=<hex>`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any

import httpx
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import SecretStr

from hub.adapter import (
    AdapterPlugin,
    Capabilities,
    HubPort,
    OutcomeUnknown,
    PermanentDeliveryError,
    PlatformSection,
    PlatformUnauthorized,
    PlatformUnavailable,
    RateLimited,
    TransientDeliveryError,
    handle_or_keep,
)
from hub.messages import Address, AddressKind, Inbound, OutboundChunk, PlatformUser

WEBHOOK_PATH = "/webhooks/minichat"


class MinichatSettings(PlatformSection):
    """`[minichat]` in hub.toml; the credentials come from the environment or secrets.toml
    (`ANIMAHUB_MINICHAT__TOKEN`), never from hub.toml itself."""

    token: SecretStr | None = None
    signing_secret: SecretStr | None = None
    api_url: str = "https://api.minichat.example"


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class MinichatAdapter:
    name = "minichat"
    capabilities = Capabilities(max_text=2000)  # the hub chunks replies to fit

    def __init__(self, section: MinichatSettings) -> None:
        """Built from `[minichat]` alone, when it is enabled (the hub hands no more)."""
        if section.token is None or section.signing_secret is None:
            raise ValueError("[minichat] needs token and signing_secret")
        self._token = section.token.get_secret_value()
        self._secret = section.signing_secret.get_secret_value()
        self._api_url = section.api_url
        self._http: httpx.AsyncClient | None = None
        self._hub: HubPort | None = None
        self.bot_id = ""

    async def start(self, hub: HubPort) -> None:
        """Check the token; the hub retries `PlatformUnavailable` with backoff and reports
        `PlatformUnauthorized` without retrying it."""
        headers = {"Authorization": f"Bearer {self._token}"}
        http = httpx.AsyncClient(base_url=self._api_url, headers=headers, timeout=10.0)
        try:
            response = await http.get("/me")
        except httpx.TransportError as exc:
            await http.aclose()
            raise PlatformUnavailable(f"Minichat cannot be reached: {exc!r}") from exc
        if response.status_code == 401:
            await http.aclose()
            raise PlatformUnauthorized("Minichat refused the token (check minichat.token)")
        if response.status_code != 200:
            await http.aclose()
            raise PlatformUnavailable(f"Minichat /me answered {response.status_code}")
        self.bot_id = str(response.json()["id"])
        self._http, self._hub = http, hub

    async def stop(self) -> None:
        self._hub = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def render(self, markdown: str) -> str:
        return markdown  # Minichat shows CommonMark as it is

    async def send(self, chunk: OutboundChunk) -> str:
        if self._http is None:
            raise TransientDeliveryError("Minichat is not connected")
        body = {"channel": chunk.address.channel, "text": chunk.text}
        try:
            response = await self._http.post("/messages", json=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # never reached Minichat
            raise TransientDeliveryError(f"Minichat cannot be reached: {exc!r}") from exc
        except httpx.TransportError as exc:  # sent, but no answer: it may have been posted
            raise OutcomeUnknown(f"Minichat did not answer: {exc!r}") from exc
        if response.status_code == 429:
            raise RateLimited(float(response.headers.get("Retry-After", "1")))
        if response.status_code >= 500:
            raise TransientDeliveryError(f"Minichat answered {response.status_code}")
        if response.status_code != 200:
            raise PermanentDeliveryError(f"Minichat refused it: {response.text}")
        return str(response.json()["id"])

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        raise PermanentDeliveryError("Minichat messages cannot be edited")

    def routers(self) -> Sequence[APIRouter]:
        router = APIRouter()
        router.add_api_route(WEBHOOK_PATH, self._webhook, methods=["POST"], include_in_schema=False)
        return [router]

    async def _webhook(self, request: Request) -> Response:
        body = await request.body()
        given = request.headers.get("X-Minichat-Signature", "")
        if not hmac.compare_digest(signature(self._secret, body), given):
            return JSONResponse({"detail": "invalid signature"}, status_code=401)
        hub = self._hub
        if hub is None:  # not acknowledged: Minichat delivers it again later
            return JSONResponse({"detail": "not connected"}, status_code=503)
        try:
            event = json.loads(body)
            inbound = self.normalize(event)
        except (ValueError, KeyError, TypeError) as exc:
            return JSONResponse({"detail": f"not a Minichat event: {exc}"}, status_code=400)
        # An event the hub cannot store is kept as failed and acknowledged (never a loop of
        # redeliveries); a transient failure (the database away) answers 500: sent again.
        await handle_or_keep(
            hub, self.name, inbound.event_id, lambda: event, _receive(hub, inbound)
        )
        return JSONResponse({"ok": True})

    def normalize(self, event: dict[str, Any]) -> Inbound:
        """A Minichat event as the hub's `Inbound`: the event id is the dedup key (a
        redelivery carries the same one); a channel message is for the hub only when it
        mentions the bot."""
        channel, user, message = event["channel"], event["user"], event["message"]
        kind = AddressKind.DM if channel["dm"] else AddressKind.CHANNEL
        return Inbound(
            event_id=str(event["id"]),
            address=Address(self.name, self.bot_id, str(channel["id"]), None, kind),
            sender=PlatformUser(self.name, str(user["id"]), str(user.get("name", ""))),
            text=str(message["text"]),
            addressed=kind is AddressKind.DM or bool(message.get("mentions_bot")),
        )


async def _receive(hub: HubPort, inbound: Inbound) -> None:
    await hub.receive(inbound)


# What the `animahub.adapters` entry point names (docs/adapters.md):
#     minichat = "animahub_kit.example.minichat:PLUGIN"
PLUGIN = AdapterPlugin(settings=MinichatSettings, build=MinichatAdapter)
