"""Show a reply while it is being written, by posting it once and editing it as it grows.

Platforms without a streaming API (Slack, Discord, Telegram) get live replies this way. The
streamed message is only a preview: the final text still comes through the outbox, and the
adapter's `send` of the reply's first chunk calls `claim()` to edit the preview into the
final text instead of posting a second message. Streaming is best-effort: a failed preview
post or edit stops the preview and the outbox delivers the reply as usual; a rate-limited
one is skipped and tried again with later text.

Order and restarts (adapters/previews.py): the preview is written ahead in the hub's
`PreviewBook` before its post goes and its id saved the moment the post returns, so the
reply edits it also after a restart, and a post whose id a kill lost is looked for on the
platform (`find_lost`); a preview is not posted while a message to the same address waits
in the outbox (`HubPort.pending_delivery`), so it can never appear above an earlier reply
still due.

A platform with an ephemeral preview (Telegram's drafts) gets `ephemeral` instead: nothing
is posted, so nothing can be left behind or doubled, and the reply is posted whole.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from adapters.previews import Intended, Placed, PreviewBook
from hub.adapter import (
    Cursors,
    DeliveryError,
    RateLimited,
    TransientDeliveryError,
    TurnEvent,
    Watching,
)
from hub.messages import Address

log = logging.getLogger(__name__)

# address, text, key (the event id it answers), anima (whose bot posts) -> message id
Post = Callable[[Address, str, str | None, str | None], Awaitable[str]]
Edit = Callable[[Address, str, str], Awaitable[None]]  # address, message id, text
Render = Callable[[str], str]
# address, key, the intent: the id of the preview a kill lost, found on the platform, or None
FindLost = Callable[[Address, str, Intended], Awaitable[str | None]]
Ephemeral = Callable[[Address, str, str], Awaitable[None]]  # address, key, text
_ELLIPSIS = " …"
_FORGET_AFTER_S = 600.0  # live previews whose reply never came through the outbox
FIRST_PREVIEW_AFTER_S = 1.0  # a reply written faster than this is not previewed


class PreviewHub(Cursors, Watching, Protocol):
    """What the streamer needs of the hub: two of `HubPort`'s small ports."""


@dataclass
class _Preview:
    inbox_id: str
    address: Address
    key: str  # the event id the reply answers: the outbox sends it as `answers`
    started: float
    anima: str | None = None
    message_id: str | None = None
    # Held while a post or edit is in flight, so claim() never cancels a post half-way
    # (the message would exist on the platform with its id lost: a duplicate).
    busy: asyncio.Lock = field(default_factory=asyncio.Lock)
    task: asyncio.Task[None] | None = None


class EditStreamer:
    def __init__(
        self,
        platform: str,
        post: Post | None,
        edit: Edit | None,
        render: Render,
        max_text: int,
        interval_s: float = 1.0,
        first_after_s: float = FIRST_PREVIEW_AFTER_S,
        *,
        find_lost: FindLost | None = None,
        ephemeral: Ephemeral | None = None,
    ) -> None:
        self._platform = platform
        self._post = post
        self._edit = edit
        self._render = render
        self._max_text = max_text
        self._interval_s = interval_s
        self._first_after_s = first_after_s
        self._find_lost = find_lost
        self._ephemeral = ephemeral
        self._hub: PreviewHub | None = None
        self._book: PreviewBook | None = None
        self._previews: dict[str, _Preview] = {}
        self._closing = False

    def open(self, hub: PreviewHub) -> None:
        """At the adapter's start: previews are kept in this hub."""
        self._hub = hub
        self._book = PreviewBook(self._platform, hub)

    def follow(self, inbox_id: str, address: Address, key: str) -> None:
        """Preview the reply to `inbox_id`; `key` is the event id the reply answers (the
        outbox sends the reply with it as `answers`)."""
        if self._hub is None:
            return  # not started: nothing to preview into
        self._forget_stale()
        preview = _Preview(inbox_id, address, key, time.monotonic())
        self._previews[key] = preview
        preview.task = asyncio.create_task(self._run(self._hub, inbox_id, preview))
        preview.task.add_done_callback(_log_crash)

    async def claim(self, key: str, address: Address) -> Placed | None:
        """Stop the live preview of `key`; the preview to edit into the final text (also
        one posted before a restart, and again on a resend), or None to post anew."""
        preview = self._previews.pop(key, None)
        if preview is not None:
            async with preview.busy:
                if preview.task is not None:
                    preview.task.cancel()
            if preview.task is not None:
                await asyncio.gather(preview.task, return_exceptions=True)
        book = self._book
        if book is None:  # stopped: a post without the book could double the preview
            raise TransientDeliveryError(f"the {self._platform} adapter is not started")
        found = book.find(key)
        if not isinstance(found, Intended):
            return found
        message_id = await self._find_lost(address, key, found) if self._find_lost else None
        if message_id is None:
            book.drop(key)  # never posted, or not to be found: the reply is posted anew
            return None
        placed = Placed(message_id, found.anima)
        book.record(key, placed)
        log.info("found the preview of the reply to %s that a stop lost: %s", key, message_id)
        return placed

    def drop(self, key: str) -> None:
        """The preview could not be edited (deleted meanwhile): the reply is posted anew."""
        if self._book is not None:
            self._book.drop(key)

    async def close(self) -> None:
        self._closing = True  # no new post from here on: only those in flight finish
        previews = list(self._previews.values())
        self._previews.clear()
        for preview in previews:
            async with preview.busy:  # never cut a post short: its id would be lost
                if preview.task is not None:
                    preview.task.cancel()
        await asyncio.gather(*(p.task for p in previews if p.task), return_exceptions=True)
        self._hub = self._book = None
        self._closing = False

    async def _run(self, hub: PreviewHub, inbox_id: str, preview: _Preview) -> None:
        events: asyncio.Queue[TurnEvent | None] = asyncio.Queue()
        reader = asyncio.create_task(_read(hub.subscribe(inbox_id), events))
        text = shown = ""
        last = -self._interval_s
        # A reply written within first_after_s gets no preview: it arrives whole (no partial
        # message that a kill could leave behind, no edit a moment later).
        first_due: float | None = None
        ready = False
        try:
            while True:
                wait = None
                if not ready and first_due is not None:
                    wait = max(0.0, first_due - time.monotonic())
                try:
                    # Not wait_for: on 3.11 it can swallow a cancel that lands as the item
                    # arrives, and the preview then outlives the adapter's stop.
                    async with asyncio.timeout(wait):
                        event = await events.get()
                except TimeoutError:
                    event = TurnEvent("text", "", preview.anima or "")  # time to show it
                if event is not None and event.type == "waiting":
                    continue  # no first token yet: nothing to preview
                if event is not None and event.type == "delayed":
                    text = ""  # the model failed mid-way: the next attempt writes anew
                    continue
                if event is None or event.type != "text":
                    return
                preview.anima = event.anima or preview.anima
                text += event.text
                now = time.monotonic()
                if first_due is None and text:
                    first_due = now + self._first_after_s
                if not ready:
                    if first_due is None or now < first_due:
                        continue
                    ready = True
                view = self._view(text)
                if now - last < self._interval_s or not view or view == shown:
                    continue
                last = now
                try:
                    if await self._show(hub, preview, view):
                        shown = view
                except RateLimited as exc:  # the channel is held: later text tries again
                    log.debug("preview of the reply to %s skipped: %s", preview.key, exc)
        except DeliveryError as exc:
            log.info("stopped previewing the reply to %s: %s", preview.key, exc)
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    async def _show(self, hub: PreviewHub, preview: _Preview, view: str) -> bool:
        """Post or edit the preview; False when it may not be posted yet."""
        async with preview.busy:
            if self._closing:
                return False
            if self._ephemeral is not None:
                await self._ephemeral(preview.address, preview.key, view)
                return True
            assert self._post is not None and self._edit is not None, "nothing to show with"
            if preview.message_id is not None:
                await self._edit(preview.address, preview.message_id, view)
                return True
            if hub.pending_delivery(preview.address, besides=preview.inbox_id):
                return False  # an earlier message is still due there: it comes first
            anima, book = preview.anima, self._book
            if book is not None:
                book.intend(preview.key, anima)
            try:
                message_id = await self._post(preview.address, view, preview.key, anima)
            except RateLimited:
                if book is not None:
                    book.drop(preview.key)  # refused: nothing was posted
                raise
            preview.message_id = message_id
            if book is not None:
                book.record(preview.key, Placed(message_id, anima))
            return True

    def _view(self, text: str) -> str:
        rendered = self._render(text.strip())
        if len(rendered) + len(_ELLIPSIS) > self._max_text:
            rendered = rendered[: self._max_text - len(_ELLIPSIS)]
        return f"{rendered}{_ELLIPSIS}" if rendered else ""

    def _forget_stale(self) -> None:
        cutoff = time.monotonic() - _FORGET_AFTER_S
        for key in [k for k, p in self._previews.items() if p.started < cutoff]:
            preview = self._previews.pop(key)
            if preview.task is not None and not preview.busy.locked():
                preview.task.cancel()


async def _read(feed: AsyncIterator[TurnEvent], into: asyncio.Queue[TurnEvent | None]) -> None:
    """A turn's events into a queue, so the preview can wait on them with a timeout
    (cancelling a wait on the feed itself would end the feed)."""
    try:
        async for event in feed:
            into.put_nowait(event)
    finally:
        into.put_nowait(None)


def _log_crash(task: asyncio.Task[None]) -> None:
    """A preview that failed other than by a DeliveryError (the hub could not save its id)
    is logged with its traceback; the outbox still delivers the reply."""
    if not task.cancelled() and task.exception() is not None:
        log.error("a preview failed", exc_info=task.exception())
