"""The web platform. It has no servers of its own: the hub's transcript is its history."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from pydantic import AfterValidator, BaseModel, Field
from sse_starlette import EventSourceResponse

from adapters.web.settings import WebSettings
from hub.adapter import (
    Capabilities,
    ConversationEntry,
    HubPort,
    MarkdownDialect,
    NotPermitted,
    TranscriptEntry,
    caller_of,
    parse_command,
)
from hub.messages import (
    CONVERSATION_ID_PATTERN,
    PERSON_NAME_PATTERN,
    Address,
    AddressKind,
    Inbound,
    OutboundChunk,
    PlatformUser,
)

STATIC = Path(__file__).parent / "static"
USER_PATTERN = PERSON_NAME_PATTERN  # inner spaces allowed, as display names have them


# `user` names the person to act for: the hub honours it for its owner and the admin token
# only (docs/people.md). Everyone else speaks as who they signed in as.


def _said(text: str) -> str:
    if not text.strip():  # stored, it showed as an empty bubble and an empty episode line
        raise ValueError("the message is empty")
    return text


Said = Annotated[str, AfterValidator(_said)]


class ChatRequest(BaseModel):
    message: Said
    conversation_id: str = Field(pattern=CONVERSATION_ID_PATTERN)
    user: str | None = Field(default=None, pattern=USER_PATTERN)
    channel: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_-]{0,79}$")
    message_id: str | None = Field(default=None, pattern=r"^[\w.:-]{1,100}$")


class PostRequest(BaseModel):
    text: Said
    user: str | None = Field(default=None, pattern=USER_PATTERN)
    message_id: str | None = Field(default=None, pattern=r"^[\w.:-]{1,100}$")


class WebAdapter:
    name = "web"
    capabilities = Capabilities(max_text=100_000, dialect=MarkdownDialect.COMMONMARK, edits=True)

    def __init__(self, web: WebSettings) -> None:
        self._workspace = web.workspace
        self._channels = list(web.channels)
        self._hub: HubPort | None = None

    # Adapter protocol -----------------------------------------------------------------

    async def start(self, hub: HubPort) -> None:
        self._hub = hub

    async def stop(self) -> None:
        self._hub = None

    def render(self, markdown: str) -> str:
        return markdown

    async def send(self, chunk: OutboundChunk) -> str:
        # The transcript is the web platform's store, so delivering is acknowledging; the id
        # is derived from the delivery, which makes a resend after a crash idempotent.
        return f"web:{chunk.delivery_id}:{chunk.index}"

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        return None  # the page re-reads the transcript; nothing is cached to update

    def routers(self) -> Sequence[APIRouter]:
        return [self._router()]

    # addresses --------------------------------------------------------------------------

    def dm_address(self, anima: str, user: str, conversation_id: str) -> Address:
        return Address(
            "web", self._workspace, f"dm:{anima}:{user}", conversation_id, AddressKind.DM
        )

    def channel_address(self, channel: str) -> Address:
        return Address("web", self._workspace, channel, None, AddressKind.CHANNEL)

    @property
    def hub(self) -> HubPort:
        if self._hub is None:
            raise HTTPException(503, "the hub is not running")
        return self._hub

    def _require_anima(self, name: str) -> None:
        if name not in self.hub.anima_names():
            raise HTTPException(404, f"no Anima named {name!r}")

    def _speaker(self, request: Request, user: str | None) -> PlatformUser:
        """Who this request speaks as, from what the hub's edge established."""
        try:
            return self.hub.speaker(caller_of(request.scope), self.name, user)
        except NotPermitted as exc:
            raise HTTPException(403, str(exc)) from None

    def _require_channel(self, name: str) -> None:
        if name not in self._channels:
            raise HTTPException(404, f"no web channel named {name!r}")

    # routes ---------------------------------------------------------------------------

    def _router(self) -> APIRouter:
        router = APIRouter()
        router.add_api_route("/", self.page, methods=["GET"], include_in_schema=False)
        router.add_api_route("/api/chat/{name}", self.chat, methods=["POST"])
        router.add_api_route("/api/chat/{name}/history", self.history, methods=["GET"])
        router.add_api_route(
            "/api/chat/{name}/conversations", self.conversation_list, methods=["GET"]
        )
        router.add_api_route("/api/channels", self.channels, methods=["GET"])
        router.add_api_route("/api/channels/{name}/posts", self.posts, methods=["GET"])
        router.add_api_route(
            "/api/channels/{name}/posts", self.post, methods=["POST"], status_code=202
        )
        router.routes.append(_static_mount())
        return router

    async def page(self) -> FileResponse:
        return FileResponse(STATIC / "index.html")

    async def chat(self, name: str, body: ChatRequest, request: Request) -> EventSourceResponse:
        """Send a message to an Anima; the reply streams back as Server-Sent Events."""
        self._require_anima(name)
        sender = self._speaker(request, body.user)
        if body.channel is not None:
            self._require_channel(body.channel)
            address = self.channel_address(body.channel)
        else:
            address = self.dm_address(name, sender.user_id, body.conversation_id)
        command = parse_command(body.message)  # "/anima …", "/whoami" typed in the chat
        inbound = Inbound(
            event_id=body.message_id or str(uuid.uuid4()),
            address=address,
            sender=sender,
            text=body.message,
            mentions=(name,),
            command=command,
        )
        receipt = await self.hub.receive(inbound)
        if command is not None:
            return EventSourceResponse(_command_reply(receipt.reply or ""), ping=15)
        return EventSourceResponse(self._relay(receipt.inbox_id), ping=15)

    async def _relay(self, inbox_id: str) -> AsyncIterator[dict[str, str]]:
        async for event in self.hub.subscribe(inbox_id):
            data: dict[str, Any] = {"type": event.type}
            if event.type == "text":
                data["text"] = event.text
            elif event.type in ("error", "delayed", "waiting"):
                # delayed: the model failed, the answer comes later in this stream (the text
                # shown so far is dropped); waiting: no first token yet. Neither ends it.
                data["message"] = event.text
            yield {"data": json.dumps(data, ensure_ascii=False)}

    async def history(
        self,
        name: str,
        request: Request,
        conversation_id: Annotated[str, Query(pattern=CONVERSATION_ID_PATTERN)],
        user: Annotated[str | None, Query(pattern=USER_PATTERN)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    ) -> dict[str, list[TranscriptEntry]]:
        self._require_anima(name)
        sender = self._speaker(request, user)
        entries = self.hub.transcript(self.dm_address(name, sender.user_id, conversation_id), limit)
        return {"messages": entries}

    async def conversation_list(
        self,
        name: str,
        request: Request,
        user: Annotated[str | None, Query(pattern=USER_PATTERN)] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        q: Annotated[str, Query(max_length=200)] = "",
    ) -> dict[str, list[ConversationEntry]]:
        """The caller's conversations with an Anima, the latest first: stored by the hub,
        so another browser or device lists them too. `q`: only those in which these words
        were said, by the caller or the Anima."""
        self._require_anima(name)
        sender = self._speaker(request, user)
        place = self.dm_address(name, sender.user_id, "")
        return {"conversations": self.hub.conversations(place, limit, q)}

    async def channels(self) -> list[dict[str, str]]:
        return [{"name": c, "address": str(self.channel_address(c))} for c in self._channels]

    async def posts(
        self, name: str, limit: Annotated[int, Query(ge=1, le=1000)] = 100
    ) -> dict[str, list[TranscriptEntry]]:
        self._require_channel(name)
        return {"posts": self.hub.transcript(self.channel_address(name), limit)}

    async def post(self, name: str, body: PostRequest, request: Request) -> dict[str, Any]:
        """A person posts to a web channel; the routed Anima answers there."""
        self._require_channel(name)
        inbound = Inbound(
            event_id=body.message_id or str(uuid.uuid4()),
            address=self.channel_address(name),
            sender=self._speaker(request, body.user),
            text=body.text,
            command=parse_command(body.text),
        )
        receipt = await self.hub.receive(inbound)
        return {"id": receipt.inbox_id, "duplicate": receipt.duplicate, "reply": receipt.reply}


async def _command_reply(text: str) -> AsyncIterator[dict[str, str]]:
    """A command's answer in the chat's event shape: one text event, then done."""
    for data in ({"type": "text", "text": text}, {"type": "done"}):
        yield {"data": json.dumps(data, ensure_ascii=False)}


def _static_mount() -> Any:
    from starlette.routing import Mount

    return Mount("/static", app=StaticFiles(directory=STATIC), name="web-static")
