"""The contract between the hub and a platform adapter (DESIGN §2, §4).

`hub/` defines these protocols and never imports `adapters/`; concrete adapters are found by
name through the `animahub.adapters` entry point group and wired in by `hub/app.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hub.messages import Address, Inbound, OutboundChunk

if TYPE_CHECKING:
    from fastapi import APIRouter

    from hub.settings import Settings

ENTRY_POINT_GROUP = "animahub.adapters"


class MarkdownDialect(StrEnum):
    COMMONMARK = "commonmark"
    SLACK_MRKDWN = "mrkdwn"
    DISCORD = "discord"
    TELEGRAM_HTML = "telegram-html"
    PLAIN = "plain"


@dataclass(frozen=True, slots=True)
class Capabilities:
    max_text: int
    dialect: MarkdownDialect = MarkdownDialect.COMMONMARK
    edits: bool = False
    threads: bool = False
    reactions: bool = False
    slash_commands: bool = False


class DeliveryError(Exception):
    """A send failed; the outbox decides from the subclass whether to retry."""


class RateLimited(DeliveryError):
    def __init__(self, retry_after: float, detail: str = "") -> None:
        super().__init__(detail or f"rate limited, retry after {retry_after:.1f}s")
        self.retry_after = retry_after


class TransientDeliveryError(DeliveryError):
    """Worth retrying with backoff (network error, 5xx)."""


class PermanentDeliveryError(DeliveryError):
    """Retrying cannot help (channel gone, bot removed, message rejected)."""


@dataclass(frozen=True, slots=True)
class Receipt:
    """What ingress answers an adapter: the inbox id, and whether the event was seen before.

    `reply` is the answer to a slash command, for the adapter to show as the command's
    immediate (usually private) response; ordinary messages are answered via the outbox.
    """

    inbox_id: str
    duplicate: bool
    reply: str | None = None


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """A live event of a turn, for adapters that stream (web SSE, edit-streaming)."""

    type: str  # "text" | "done" | "error"
    text: str = ""
    anima: str = ""


@dataclass(frozen=True, slots=True)
class TranscriptEntry:
    """One message in a conversation or channel, as platforms without storage show it."""

    id: str
    address: str
    author: str
    author_kind: str  # "person" | "anima"
    text: str
    at: str
    anima: str | None = None


class HubPort(Protocol):
    """What an adapter may ask of the hub. Everything else flows through the outbox."""

    async def receive(self, inbound: Inbound) -> Receipt: ...

    def subscribe(self, inbox_id: str) -> AsyncIterator[TurnEvent]: ...

    def anima_names(self) -> list[str]: ...

    def transcript(self, address: Address, limit: int) -> list[TranscriptEntry]: ...


@runtime_checkable
class Adapter(Protocol):
    name: str
    capabilities: Capabilities

    async def start(self, hub: HubPort) -> None: ...

    async def stop(self) -> None: ...

    def render(self, markdown: str) -> str:
        """Convert CommonMark into the platform's dialect (before chunking)."""
        ...

    async def send(self, chunk: OutboundChunk) -> str:
        """Send one chunk; return its platform message id. Raise a DeliveryError on failure."""
        ...

    async def edit(self, address: Address, message_id: str, text: str) -> None: ...

    def routers(self) -> Sequence[APIRouter]:
        """HTTP routes the platform needs (webhooks, pages); mounted by the API server."""
        ...


class AdapterFactory(Protocol):
    def __call__(self, settings: Settings) -> Adapter | None:
        """Build the adapter, or None when it is not enabled in the settings."""
        ...


def discover(names: Sequence[str] | None = None) -> dict[str, AdapterFactory]:
    """Adapter factories registered under the entry point group, by platform name."""
    found: dict[str, Any] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if names is None or ep.name in names:
            found[ep.name] = ep.load()
    if names is not None:
        missing = sorted(set(names) - set(found))
        if missing:
            raise LookupError(f"no adapter registered for: {', '.join(missing)}")
    return found
