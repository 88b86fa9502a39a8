"""What the fake Slack POSTs to the hub (event callbacks, slash commands), signed as Slack
signs a request: v0 HMAC-SHA256 of ``v0:{ts}:{body}`` with the signing secret."""

from __future__ import annotations

import hashlib
import hmac
import time

import aiohttp

from animahub_kit.fakes.slack.state import SlackState


def sign(secret: str, timestamp: str, body: str) -> dict[str, str]:
    """Slack's request signature headers for `body`."""
    base = f"v0:{timestamp}:{body}".encode()
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": f"v0={digest}"}


class Signer:
    """Posts to the hub's `events_url` over one client session, open while the fake runs."""

    def __init__(self, state: SlackState) -> None:
        self._state = state
        self._http: aiohttp.ClientSession | None = None

    def open(self) -> None:
        self._http = aiohttp.ClientSession()

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def post_signed(
        self,
        raw: str,
        headers: dict[str, str],
        *,
        secret: str | None = None,
        timestamp: int | None = None,
    ) -> tuple[int, str]:
        """POST `raw` to the hub's events URL, signed as Slack signs (or with a wrong secret
        or an old timestamp, for the rejection cases)."""
        events_url = self._state.events_url
        assert events_url is not None and self._http is not None
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signed = {**headers, **sign(secret or self._state.signing_secret, stamp, raw)}
        async with self._http.post(events_url, data=raw.encode(), headers=signed) as resp:
            return resp.status, await resp.text()
