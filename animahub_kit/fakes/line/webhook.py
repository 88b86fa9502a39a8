"""The webhook as LINE's side of it: ``{"destination", "events"}`` POSTed to the hub's
``webhook_url``, signed with the channel secret (``X-Line-Signature``: base64 HMAC-SHA256 of
the body); a redelivery (``deliveryContext.isRedelivery: true``, the same ``webhookEventId``);
LINE's webhook redelivery loop; and the forged and unsigned rejection cases.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json

import aiohttp

from animahub_kit.fakes.line.objects import JSON, Delivery
from animahub_kit.fakes.line.state import LineState


def sign(secret: str, body: bytes) -> str:
    """LINE's `X-Line-Signature` for `body`."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def _redelivered(event: JSON) -> JSON:
    """A copy of `event` marked as a redelivery."""
    body: JSON = json.loads(json.dumps(event))
    body["deliveryContext"] = {"isRedelivery": True}
    return body


class Webhook:
    def __init__(self, state: LineState) -> None:
        self._state = state
        self._http: aiohttp.ClientSession | None = None

    def open(self) -> None:
        if self._http is None:
            self._http = aiohttp.ClientSession()

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    def payload(self, events: list[JSON]) -> bytes:
        return json.dumps({"destination": self._state.bot_user_id, "events": events}).encode()

    def _signed(self, raw: bytes) -> str:
        return sign(self._state.channel_secret, raw)

    async def post_webhook(self, raw: bytes, signature: str | None) -> Delivery:
        url = self._state.webhook_url
        assert url is not None, "webhook_url is not set"
        self.open()
        assert self._http is not None
        headers = {"Content-Type": "application/json"}
        if signature is not None:
            headers["X-Line-Signature"] = signature
        async with self._http.post(url, data=raw, headers=headers) as resp:
            delivery = Delivery(resp.status, await resp.text())
        self._state.deliveries.append(delivery)
        return delivery

    async def deliver(self, *events: JSON) -> Delivery:
        """POST the events in one signed webhook request, as LINE does."""
        for event in events:
            self._state.events.setdefault(event["webhookEventId"], event)
        raw = self.payload(list(events))
        return await self.post_webhook(raw, self._signed(raw))

    async def deliver_until_accepted(
        self, event: JSON, *, retry_delays_s: tuple[float, ...], timeout_s: float = 2.0
    ) -> Delivery:
        """Deliver one event the way LINE does with webhook redelivery on: a signed POST
        that must be answered 2xx within `timeout_s`; a refused connection, an error status
        or no answer in time make LINE send it again later (`isRedelivery: true`, the same
        `webhookEventId`) after each of `retry_delays_s`. When they run out the event is
        lost (the last failed delivery is returned). LINE publishes no schedule; tests pass
        a compressed one."""
        self._state.events.setdefault(event["webhookEventId"], event)
        last = Delivery(0, "not delivered")
        for attempt in range(len(retry_delays_s) + 1):
            if attempt:
                await asyncio.sleep(retry_delays_s[attempt - 1])
                raw = self.payload([_redelivered(event)])
            else:
                raw = self.payload([event])
            try:
                last = await asyncio.wait_for(self.post_webhook(raw, self._signed(raw)), timeout_s)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                last = Delivery(0, f"{type(exc).__name__}: {exc}")
                self._state.deliveries.append(last)
                continue
            if 200 <= last.status < 300:
                return last
        return last

    async def redeliver(self, webhook_event_id: str) -> Delivery:
        """The same event again, marked as a redelivery (its reply token is long gone)."""
        event = _redelivered(self._state.events[webhook_event_id])
        token = self._state.tokens.get(event.get("replyToken", ""))
        if token is not None:
            token.used = True
        raw = self.payload([event])
        return await self.post_webhook(raw, self._signed(raw))

    async def forged(self, *events: JSON) -> Delivery:
        raw = self.payload(list(events))
        return await self.post_webhook(raw, sign("not-the-channel-secret", raw))

    async def unsigned(self, *events: JSON) -> Delivery:
        return await self.post_webhook(self.payload(list(events)), None)
