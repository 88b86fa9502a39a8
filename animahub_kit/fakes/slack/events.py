"""The Events API as Slack's side of it: an ``event_callback`` delivered as a signed POST to
the hub's ``events_url``, or as an ``events_api`` envelope over Socket Mode when none is set;
a redelivery with ``X-Slack-Retry-Num``; Slack's at-least-once delivery over the socket
(sent again until acknowledged); and the forged and stale requests a hub must refuse.
Every delivery is recorded in the state's `deliveries`."""

from __future__ import annotations

import asyncio
import json
import time

from animahub_kit.fakes.slack.model import JSON, Delivery
from animahub_kit.fakes.slack.signing import Signer
from animahub_kit.fakes.slack.socket_mode import SocketMode
from animahub_kit.fakes.slack.state import SlackState

# Slack retries an unacknowledged event three times: at once, after a minute, after five.
SLACK_RETRY_DELAYS_S = (0.0, 60.0, 300.0)
ACK_TIMEOUT_S = 3.0  # Slack's time to acknowledge an envelope or event


class Events:
    def __init__(self, state: SlackState, socket: SocketMode, signer: Signer) -> None:
        self._state = state
        self._socket = socket
        self._signer = signer
        self._retries: dict[str, int] = {}

    async def deliver(self, event: JSON, event_id: str | None = None) -> Delivery:
        """Deliver an event: signed POST to `events_url`, else over the socket."""
        body = self._state.callback(event, event_id)
        self._state.sent[body["event_id"]] = body
        delivery = await self._send(body, retry=0)
        self._state.deliveries.append(delivery)
        return delivery

    async def redeliver(self, event_id: str, reason: str = "http_timeout") -> Delivery:
        """Deliver the same event again, as Slack retries one it saw no quick 200 for."""
        body = self._state.sent[event_id]
        retry = self._retries.get(event_id, 0) + 1
        self._retries[event_id] = retry
        delivery = await self._send(body, retry=retry, reason=reason)
        self._state.deliveries.append(delivery)
        return delivery

    async def _send(self, body: JSON, retry: int, reason: str = "http_timeout") -> Delivery:
        if self._state.events_url is None:
            envelope_id = self._socket.push(
                "events_api", body, retry_attempt=retry, retry_reason=reason
            )
            await self._socket.ack(envelope_id)
            return Delivery(body["event_id"], 200, envelope_id=envelope_id)
        raw = json.dumps(body)
        headers = {"Content-Type": "application/json"}
        if retry:
            headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": reason})
        status, text = await self._signer.post_signed(raw, headers)
        return Delivery(body["event_id"], status, text)

    async def deliver_until_acked(
        self,
        event: JSON,
        *,
        retry_delays_s: tuple[float, ...] = SLACK_RETRY_DELAYS_S,
        ack_timeout_s: float = ACK_TIMEOUT_S,
    ) -> Delivery:
        """Deliver an event over Socket Mode the way Slack does: an envelope on the open
        connection, acknowledged within `ack_timeout_s`, or else sent again (a new envelope,
        the same event and event_id, `retry_attempt` counting up) after each of
        `retry_delays_s`, whether or not a connection was open meanwhile. When every retry
        goes unacknowledged the event is lost (status 0), as on Slack. Tests pass a
        compressed schedule; Slack's own is SLACK_RETRY_DELAYS_S."""
        body = self._state.callback(event)
        self._state.sent[body["event_id"]] = body
        for attempt in range(len(retry_delays_s) + 1):
            if attempt:
                await asyncio.sleep(retry_delays_s[attempt - 1])
            if not self._state.sockets:
                continue  # nobody to deliver to: this attempt fails as a timeout would
            envelope_id = self._socket.push(
                "events_api",
                body,
                retry_attempt=attempt,
                retry_reason="timeout" if attempt else "",
            )
            try:
                await self._socket.ack(envelope_id, ack_timeout_s)
            except TimeoutError:
                continue
            delivery = Delivery(body["event_id"], 200, envelope_id=envelope_id, attempt=attempt)
            self._state.deliveries.append(delivery)
            return delivery
        lost = Delivery(body["event_id"], 0, attempt=len(retry_delays_s))
        self._state.deliveries.append(lost)
        return lost

    async def forged(self, event: JSON) -> int:
        status, _ = await self._signer.post_signed(
            json.dumps(self._state.callback(event)),
            {"Content-Type": "application/json"},
            secret="not-the-signing-secret",
        )
        return status

    async def stale(self, event: JSON, age_s: int = 600) -> int:
        status, _ = await self._signer.post_signed(
            json.dumps(self._state.callback(event)),
            {"Content-Type": "application/json"},
            timestamp=int(time.time()) - age_s,
        )
        return status
