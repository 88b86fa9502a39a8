"""What the streamed previews of Slack, Telegram and Discord share: where each preview is,
kept in the hub (`PreviewBook`), and one send at a time per channel, none while a 429's
retry-after runs (`ChannelGate`).

Each preview is written ahead: `intend` stores that a post is about to go (when, and by
which Anima) before the post is sent, and `record` its message id as soon as the post
returns. The id is kept after the reply's first chunk was edited into it: a resend of that
chunk (the outbox retrying, or sending again after a restart because the hub died before it
recorded the chunk) finds the preview and edits it again, which is harmless, instead of
posting a second message. A kill between the platform accepting the post and its id being
saved leaves an intent without an id (`Intended`): the adapter then looks for the message on
the platform (Slack: by the metadata the post carried; Discord: the reply posts with the
preview's nonce), so the reply still edits it. Entries are pruned after `KEEP_S`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

from hub.adapter import Cursors, RateLimited

log = logging.getLogger(__name__)
T = TypeVar("T")
KEEP_S = 7 * 24 * 3600.0  # longer than a reply waits in the outbox, short of a platform outage
_PRUNE_EVERY_S = 3600.0
_CACHED = 5_000


@dataclass(frozen=True, slots=True)
class Placed:
    """A preview on the platform: its message id, and the Anima whose bot posted it."""

    message_id: str
    anima: str | None = None


@dataclass(frozen=True, slots=True)
class Intended:
    """A preview post that went out, or was about to, when the hub stopped: its id is not
    known. `since` (epoch seconds) is taken before the post was sent."""

    since: float
    anima: str | None = None


class PreviewBook:
    """Each reply's preview by the reply's key (the message it answers), in the hub."""

    def __init__(self, platform: str, hub: Cursors) -> None:
        self._prefix = f"preview:{platform}:"
        self._hub = hub
        self._cache: OrderedDict[str, Placed] = OrderedDict()
        self._pruned = -_PRUNE_EVERY_S

    def _cursor(self, key: str) -> str:
        # Keys are the platform's event ids, of any length; the cursor key is at most 200.
        return self._prefix + hashlib.sha256(key.encode()).hexdigest()[:40]

    def intend(self, key: str, anima: str | None) -> None:
        """Called before a preview's post is sent: a kill from here on leaves an intent."""
        self._cache.pop(key, None)
        self._hub.save_cursor(self._cursor(key), json.dumps({"since": time.time(), "anima": anima}))

    def record(self, key: str, placed: Placed) -> None:
        """Called the moment the preview's post returned, before anything else can run."""
        self._remember(key, placed)
        self._hub.save_cursor(
            self._cursor(key), json.dumps({"id": placed.message_id, "anima": placed.anima})
        )
        self._prune()

    def find(self, key: str) -> Placed | Intended | None:
        placed = self._cache.get(key)
        if placed is not None:
            return placed
        raw = self._hub.load_cursor(self._cursor(key))
        if not raw:
            return None
        data = json.loads(raw)
        anima = str(data["anima"]) if data.get("anima") else None
        if "id" not in data:
            return Intended(float(data.get("since") or 0.0), anima)
        placed = Placed(str(data["id"]), anima)
        self._remember(key, placed)
        return placed

    def drop(self, key: str) -> None:
        """The preview is gone from the platform (deleted): the reply is posted anew."""
        self._cache.pop(key, None)
        self._hub.forget_cursor(self._cursor(key))

    def _remember(self, key: str, placed: Placed) -> None:
        self._cache[key] = placed
        self._cache.move_to_end(key)
        while len(self._cache) > _CACHED:
            self._cache.popitem(last=False)

    def _prune(self) -> None:
        now = time.monotonic()
        if now - self._pruned >= _PRUNE_EVERY_S:
            self._pruned = now
            gone = self._hub.prune_cursors(self._prefix, KEEP_S)
            if gone:
                log.info("forgot %d previews older than %.0f days", gone, KEEP_S / 86400)


class ChannelGate:
    """Sends to one channel go one at a time, and none while a 429's retry-after runs.

    Every send of an adapter (the outbox's chunks, previews, edits) passes here, so a 429
    on any of them holds them all: checked after the channel's turn is taken, so a send
    queued behind the one that was refused sees the hold too.
    """

    def __init__(self) -> None:
        self._held: dict[str, float] = {}  # channel -> monotonic time the hold ends
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def held_s(self, channel: str) -> float:
        until = self._held.get(channel)
        if until is None:
            return 0.0
        left = until - time.monotonic()
        if left <= 0:
            del self._held[channel]
            return 0.0
        return left

    def hold(self, channel: str, seconds: float) -> None:
        until = time.monotonic() + max(0.0, seconds)
        self._held[channel] = max(self._held.get(channel, 0.0), until)

    async def send(self, channel: str, call: Callable[[], Awaitable[T]]) -> T:
        """Run `call` in the channel's turn; `RateLimited` at once while it is held."""
        async with self._turn(channel):
            wait = self.held_s(channel)
            if wait > 0:
                raise RateLimited(wait, f"channel {channel} is rate limited for {wait:.2f}s")
            try:
                return await call()
            except RateLimited as exc:
                self.hold(channel, exc.retry_after)
                raise

    @asynccontextmanager
    async def _turn(self, channel: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(channel, (asyncio.Lock(), 0))
        self._locks[channel] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[channel]
            if users == 1:
                del self._locks[channel]
            else:
                self._locks[channel] = (lock, users - 1)
