"""Show a reply while it is being written, by posting it once and editing it as it grows.

Platforms without a streaming API (Slack, Discord) get live replies this way. The streamed
message is only a preview: the final text still comes through the outbox, and the adapter's
`send` of the reply's first chunk calls `claim()` to edit the preview into the final text
instead of posting a second message. Streaming is best-effort: a failed preview post or edit
stops the preview and the outbox delivers the reply as usual.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from hub.adapter import DeliveryError, TurnEvent
from hub.messages import Address

log = logging.getLogger(__name__)

Post = Callable[[Address, str, str | None], Awaitable[str]]  # address, text, reply_to -> id
Edit = Callable[[Address, str, str], Awaitable[None]]  # address, message id, text
Render = Callable[[str], str]
_ELLIPSIS = " …"


class TurnFeed(Protocol):
    """What the streamer needs of the hub: the live events of one turn."""

    def subscribe(self, inbox_id: str) -> AsyncIterator[TurnEvent]: ...


class AnimaTap:
    """A turn's events, telling `on_anima` which Anima writes the reply, so that a preview
    is posted as that Anima (its own bot, or the shared one signed with its name)."""

    def __init__(self, feed: TurnFeed, on_anima: Callable[[str], None]) -> None:
        self._feed = feed
        self._on_anima = on_anima

    async def subscribe(self, inbox_id: str) -> AsyncIterator[TurnEvent]:
        async for event in self._feed.subscribe(inbox_id):
            if event.anima:
                self._on_anima(event.anima)
            yield event


_FORGET_AFTER_S = 600.0  # previews whose reply never came through the outbox


@dataclass
class _Preview:
    address: Address
    reply_to: str
    started: float
    message_id: str | None = None
    # Held while a post or edit is in flight, so claim() never cancels a post half-way
    # (the message would exist on the platform with its id lost: a duplicate).
    busy: asyncio.Lock = field(default_factory=asyncio.Lock)
    task: asyncio.Task[None] | None = None


class EditStreamer:
    def __init__(
        self, post: Post, edit: Edit, render: Render, max_text: int, interval_s: float = 1.0
    ) -> None:
        self._post = post
        self._edit = edit
        self._render = render
        self._max_text = max_text
        self._interval_s = interval_s
        self._previews: dict[str, _Preview] = {}

    def follow(self, hub: TurnFeed, inbox_id: str, address: Address, key: str) -> None:
        """Preview the reply to `inbox_id`; `key` is the reply_to the outbox will send with."""
        self._forget_stale()
        preview = _Preview(address, key, time.monotonic())
        self._previews[key] = preview
        preview.task = asyncio.create_task(self._run(hub, inbox_id, preview, key))

    async def claim(self, key: str) -> str | None:
        """The preview's message id for the final text to replace, or None to post anew."""
        preview = self._previews.pop(key, None)
        if preview is None:
            return None
        async with preview.busy:
            if preview.task is not None:
                preview.task.cancel()
        if preview.task is not None:
            await asyncio.gather(preview.task, return_exceptions=True)
        return preview.message_id

    async def close(self) -> None:
        tasks = [p.task for p in self._previews.values() if p.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._previews.clear()

    async def _run(self, hub: TurnFeed, inbox_id: str, preview: _Preview, key: str) -> None:
        text = ""
        shown = ""
        last = 0.0
        try:
            async for event in hub.subscribe(inbox_id):
                if event.type != "text":
                    return
                text += event.text
                now = time.monotonic()
                if preview.message_id is not None and now - last < self._interval_s:
                    continue
                view = self._view(text)
                if view and view != shown:
                    await self._show(preview, view)
                    shown, last = view, now
        except DeliveryError as exc:
            log.info("stopped previewing the reply to %s: %s", key, exc)

    async def _show(self, preview: _Preview, view: str) -> None:
        async with preview.busy:
            if preview.message_id is None:
                preview.message_id = await self._post(preview.address, view, preview.reply_to)
            else:
                await self._edit(preview.address, preview.message_id, view)

    def _view(self, text: str) -> str:
        rendered = self._render(text.strip())
        if len(rendered) + len(_ELLIPSIS) > self._max_text:
            rendered = rendered[: self._max_text - len(_ELLIPSIS)]
        return f"{rendered}{_ELLIPSIS}" if rendered else ""

    def _forget_stale(self) -> None:
        cutoff = time.monotonic() - _FORGET_AFTER_S
        for key in [k for k, p in self._previews.items() if p.started < cutoff]:
            preview = self._previews.pop(key)
            if preview.task is not None:
                preview.task.cancel()
