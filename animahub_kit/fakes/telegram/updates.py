"""How updates reach the bot: ``getUpdates`` (a long poll), the webhook methods
(``setWebhook``, ``deleteWebhook``, ``getWebhookInfo``), and the updates people cause.

``getUpdates`` follows Telegram's offset rule: every update below ``offset`` is confirmed and
dropped for good; the rest (up to ``limit``) are returned, or the call waits up to ``timeout``
seconds for one. A second poller while one waits ends the first with 409, and so does polling
while a webhook is set. A new update is queued for ``getUpdates``, or POSTed to the webhook
when one is set, with the right, a wrong or no ``X-Telegram-Bot-Api-Secret-Token``.
"""

from __future__ import annotations

import asyncio
import itertools
import json

import aiohttp
from aiohttp import web

from animahub_kit.fakes.telegram.objects import JSON, as_int
from animahub_kit.fakes.telegram.state import TelegramState
from animahub_kit.fakes.telegram.wire import ApiError, error

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_CONFLICT = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)


class _Superseded(Exception):
    """A long poll ended by a newer one."""


class Updates:
    def __init__(self, state: TelegramState) -> None:
        self._state = state
        self._queue: list[JSON] = []
        self._forced: list[JSON] = []  # redeliveries, handed out whatever the offset
        self._sent: dict[int, JSON] = {}  # update_id -> the update
        self._arrived = asyncio.Event()
        self._poller: asyncio.Future[None] | None = None  # the long poll waiting now
        self._conflicts = 0
        self.overlaps = 0  # polls ended by another poll that came while they waited
        self._update_ids = itertools.count(700_000_001)
        self._http: aiohttp.ClientSession | None = None

    def open(self) -> None:
        self._http = aiohttp.ClientSession()

    async def close(self) -> None:
        if self._poller is not None and not self._poller.done():
            self._poller.cancel()
        if self._http is not None:
            await self._http.close()
            self._http = None

    def conflict(self, times: int = 1) -> None:
        """The next `times` getUpdates calls end in 409, as when another poller runs."""
        self._conflicts = times

    # the webhook methods -----------------------------------------------------------------

    def delete_webhook(self, params: JSON) -> bool:
        self._state.webhook_url = ""
        self._state.webhook_secret = ""
        if params.get("drop_pending_updates") in (True, "true"):
            self._queue.clear()
        return True

    def set_webhook(self, params: JSON) -> bool:
        url = str(params.get("url") or "")
        if url and not url.startswith(("https://", "http://")):
            raise ApiError(400, "Bad Request: bad webhook: An HTTPS URL must be provided")
        self._state.webhook_url = url
        self._state.webhook_secret = str(params.get("secret_token") or "")
        if self._poller is not None and not self._poller.done():
            self._poller.cancel()
        return True

    def webhook_info(self, params: JSON) -> JSON:
        return {"url": self._state.webhook_url, "pending_update_count": len(self._queue)}

    # getUpdates --------------------------------------------------------------------------

    async def get_updates(self, params: JSON) -> web.Response:
        if self._state.webhook_url:
            return error(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        if self._conflicts > 0:
            self._conflicts -= 1
            return error(409, _CONFLICT)
        if self._poller is not None and not self._poller.done():
            self.overlaps += 1
            self._poller.set_exception(_Superseded())  # the earlier poll gets the 409
        offset = as_int(params.get("offset")) or 0
        if offset > self._state.confirmed:
            self._state.confirmed = offset
            self._queue = [u for u in self._queue if u["update_id"] >= offset]
        limit = min(100, as_int(params.get("limit")) or 100)
        timeout = float(as_int(params.get("timeout")) or 0)
        if not self._queue and not self._forced and timeout > 0:
            ended = await self._wait(seconds=timeout)
            if ended is not None:
                return ended
        result = (self._forced + self._queue)[:limit]
        self._forced = self._forced[len(result) :]
        return web.json_response({"ok": True, "result": result})

    async def _wait(self, *, seconds: float) -> web.Response | None:
        """Wait up to `seconds` for an update; the 409 that ends the poll instead
        (a newer poll, a webhook set meanwhile), or None."""
        waiting = asyncio.get_running_loop().create_future()
        self._poller = waiting
        self._arrived.clear()
        woke = asyncio.ensure_future(self._arrived.wait())
        try:
            await asyncio.wait({waiting, woke}, timeout=seconds, return_when="FIRST_COMPLETED")
        finally:
            woke.cancel()
        if waiting.done() and not waiting.cancelled() and waiting.exception() is not None:
            return error(409, _CONFLICT)
        if not waiting.done():
            waiting.cancel()
        if self._state.webhook_url:
            return error(409, "Conflict: terminated by setWebhook request")
        return None

    # the updates people cause ------------------------------------------------------------

    def update(self, kind: str, payload: JSON) -> JSON:
        update_id = next(self._update_ids)
        update = {"update_id": update_id, kind: payload}
        self._sent[update_id] = update
        return update

    async def push(self, kind: str, payload: JSON) -> JSON:
        """A new update: POSTed to the webhook when one is set, else queued for getUpdates."""
        update = self.update(kind, payload)
        if self._state.webhook_url:
            await self.deliver(update)
        else:
            self._queue.append(update)
            self._arrived.set()
        return update

    async def redeliver(self, update_id: int) -> None:
        """The same update again (same update_id), as if its confirmation was lost."""
        update = self._sent[update_id]
        if self._state.webhook_url:
            await self.deliver(update)
        else:
            self._forced.append(update)
            self._arrived.set()

    async def deliver(self, update: JSON, *, secret: str | None = None) -> int:
        """POST an update to the webhook with the secret header (`secret=""`: none at all,
        any other string: that one instead of the registered secret); the hub's status."""
        state = self._state
        assert state.webhook_url and self._http is not None
        url = state.webhook_target or state.webhook_url
        token = state.webhook_secret if secret is None else secret
        headers = {"Content-Type": "application/json"}
        if token:
            headers[SECRET_HEADER] = token
        async with self._http.post(url, data=json.dumps(update), headers=headers) as r:
            status = r.status
        state.deliveries.append((update["update_id"], status))
        return status

    def pending(self) -> list[JSON]:
        """Updates queued for getUpdates and not yet confirmed."""
        return [*self._forced, *self._queue]
