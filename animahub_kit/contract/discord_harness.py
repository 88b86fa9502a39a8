"""The contract harness for Discord: the real adapter (discord.py) against the local fake.

People speak through the fake's gateway (MESSAGE_CREATE, MESSAGE_UPDATE, THREAD_CREATE); what
the bot posted is read from the fake's record. The hub's API is served by uvicorn on a free
port so that forged and stale interactions reach `POST /discord/interactions` over real HTTP,
signed with a test Ed25519 key whose public half is in the settings.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from nacl.signing import SigningKey

from adapters.discord import DiscordAdapter
from animahub_kit.contract.harness import (
    ContractPlatform,
    Posted,
    ScriptedResponder,
    Sent,
    eventually,
    free_port,
    harness_settings,
    start_hub,
)
from animahub_kit.fakes.discord_server import JSON, FakeDiscord
from animahub_kit.fakes.faults import FaultPolicy
from hub.adapter import AdapterFactory
from hub.api.server import create_app
from hub.app import Hub
from hub.messages import Address, AddressKind
from hub.settings import Settings

MESSAGES_ROUTE = "/channels/{channel_id}/messages"
WRONG_CREDENTIALS: dict[str, Any] = {"bot_token": "not-the-bot-token"}


@dataclass
class DiscordHarness:
    fake: FakeDiscord
    hub: Hub
    responder: ScriptedResponder
    hub_url: str
    signing_key: SigningKey
    platform: str = "discord"
    max_text: int = 2000
    replies_by_reference: bool = True
    _created: dict[str, JSON] = field(default_factory=dict)  # message id -> MESSAGE_CREATE

    @property
    def adapter(self) -> DiscordAdapter:
        adapter = self.hub.adapters["discord"]
        assert isinstance(adapter, DiscordAdapter)
        return adapter

    def reply_thread(self, sent: Sent) -> str | None:
        return sent.thread  # Discord replies in place, by reference

    def user_key(self, user: str) -> str:
        return f"discord:{self.fake.user(user)['id']}"

    def mention(self) -> str:
        return f"<@{self.fake.bot['id']}>"

    async def post_message(self, data: JSON, parent: str, thread: str | None) -> Sent:
        """A person's message (built with fake.message_payload), kept for redelivery."""
        self._created[data["id"]] = json.loads(json.dumps(data))
        await self.fake.send_message(data)
        return Sent(data["id"], data["id"], parent, thread)

    async def dm(self, user: str, text: str) -> Sent:
        person = self.fake.user(user)
        channel = self.fake.dm_channel(person)
        return await self.post_message(
            self.fake.message_payload(person, channel, text), channel, None
        )

    async def say(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        mention: bool = False,
        thread: str | None = None,
    ) -> Sent:
        person = self.fake.user(user)
        parent = self.fake.channel_id(channel)
        target = parent
        if thread is not None:
            if thread not in self.fake.channels:  # a thread started from that message
                await self.fake.start_thread(thread, person)
            target = thread
        content = f"{self.mention()} {text}" if mention else text
        mentions = (self.fake.bot,) if mention else ()
        data = self.fake.message_payload(person, target, content, mentions=mentions)
        return await self.post_message(data, parent, thread)

    async def edit(self, user: str, sent: Sent, text: str) -> Sent:
        original = self.fake.messages[sent.message_id].content
        prefix = f"{self.mention()} "
        content = prefix + text if original.startswith(prefix) else text
        data = await self.fake.edit_message(sent.message_id, content)
        event_id = f"{sent.message_id}:edit:{data['edited_timestamp']}"
        return Sent(event_id, sent.message_id, sent.channel, sent.thread)

    async def attach(self, user: str, channel: str, text: str, filename: str, url: str) -> Sent:
        person = self.fake.user(user)
        parent = self.fake.channel_id(channel)
        attachment = self.fake.attachment(filename, url, "application/pdf", 48_213)
        data = self.fake.message_payload(
            person,
            parent,
            f"{self.mention()} {text}",
            mentions=(self.fake.bot,),
            attachments=(attachment,),
        )
        return await self.post_message(data, parent, None)

    async def redeliver(self, sent: Sent) -> None:
        await self.fake.redispatch("MESSAGE_CREATE", self._created[sent.message_id])

    def _signed(self, body: bytes, timestamp: str, key: SigningKey) -> dict[str, str]:
        signature = key.sign(timestamp.encode() + body).signature.hex()
        return {
            "Content-Type": "application/json",
            "X-Signature-Ed25519": signature,
            "X-Signature-Timestamp": timestamp,
        }

    def command_body(self, user: str = "alice") -> bytes:
        person = self.fake.user(user)
        options = [{"name": "list", "type": 1, "options": []}]
        data = self.fake.interaction_payload(
            person, self.fake.channel_id("general"), "anima", options
        )
        return json.dumps(data).encode()

    async def interact(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.hub_url) as http:
            return await http.post("/discord/interactions", content=body, headers=headers)

    async def signed(self, body: bytes, *, age_s: float = 0.0) -> httpx.Response:
        timestamp = str(int(time.time() - age_s))
        return await self.interact(body, self._signed(body, timestamp, self.signing_key))

    async def forged(self) -> int:
        body = self.command_body()
        headers = self._signed(body, str(int(time.time())), SigningKey.generate())
        return (await self.interact(body, headers)).status_code

    async def stale(self) -> int:
        return (await self.signed(self.command_body(), age_s=600)).status_code

    def posted(self) -> list[Posted]:
        out = []
        for message in self.fake.bot_messages():
            parent = self.fake.parent_of(message.channel_id)
            out.append(
                Posted(
                    id=message.id,
                    channel=parent or message.channel_id,
                    text=message.content,
                    thread=message.channel_id if parent else None,
                    reply_to=message.reply_to,
                    edits=message.edits,
                )
            )
        return out

    def rate_limit_posts(self, times: int, retry_after: float) -> None:
        self.fake.rate_limit("POST", MESSAGES_ROUTE, times, retry_after)

    def post_requests(self) -> int:
        return len(self.fake.requests_to("POST", MESSAGES_ROUTE))

    def set_faults(self, policy: FaultPolicy | None) -> None:
        self.fake.faults = policy

    def drop_next_send_response(self) -> None:
        self.fake.drop_next_send_response()

    def auth_attempts(self) -> int:
        return len(self.fake.requests_to("GET", "/users/@me"))

    async def platform_up(self) -> None:
        if not self.fake.running:
            await self.fake.start()

    def address(self, channel: str) -> Address:
        return Address(
            "discord", self.fake.guild_id, self.fake.channel_id(channel), None, AddressKind.CHANNEL
        )

    def attachment_url(self, url: str) -> str:
        return url


def discord_settings(
    home: Path, fake: FakeDiscord, key: SigningKey, *, with_web: bool = False, **overrides: Any
) -> Settings:
    section = {
        "enabled": True,
        "bot_token": fake.bot_token,
        "public_key": key.verify_key.encode().hex(),
        "api_url": fake.api_url,
        "gateway_url": fake.gateway_url,
        **overrides,
    }
    return harness_settings(home, discord=section, web={"enabled": with_web})


@asynccontextmanager
async def serve(hub: Hub) -> AsyncIterator[str]:
    """The hub's API over real HTTP on a free port, in this event loop (the hub is already
    started, so uvicorn's lifespan stays off)."""
    config = uvicorn.Config(
        create_app(hub), host="127.0.0.1", port=0, lifespan="off", log_level="warning"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started or task.done())
        if task.done():
            task.result()  # raises what stopped it
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def open_harness(
    tmp_path: Path,
    *,
    fake: FakeDiscord | None = None,
    factory: AdapterFactory = DiscordAdapter,
    platform_down: bool = False,
    with_web: bool = False,
    **discord: Any,
) -> AsyncIterator[DiscordHarness]:
    """`fake`: one a test prepared (e.g. with per-Anima bots); `platform_down`: the fake is
    not running when the hub starts (`platform_up` later); `with_web`: the web chat runs
    too (so `/web` has somewhere to sign in to); `discord` overrides settings of
    the [discord] section (e.g. anima_tokens, or a bot_token the fake refuses)."""
    fake = fake or FakeDiscord(port=free_port())
    if platform_down:
        assert fake.port, "a fake started later needs a fixed port"
    else:
        await fake.start()
    try:
        key = SigningKey.generate()
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        settings = discord_settings(home, fake, key, with_web=with_web, **discord)
        responder = ScriptedResponder()
        hub = await start_hub(settings, "discord", factory, responder, with_web=with_web)
        try:
            async with serve(hub) as url:
                yield DiscordHarness(fake, hub, responder, url, key)
        finally:
            await hub.stop()
    finally:
        await fake.stop()


# What the contract runs on this platform with (plugin.py says what each feature means).
PLATFORM = ContractPlatform(
    open_harness,
    frozenset({"edits", "threads", "streaming", "replay_window", "mention_routing", "captions"}),
    WRONG_CREDENTIALS,
)
