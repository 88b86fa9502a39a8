"""`POST /webhooks/line`: webhooks HMAC-signed with the channel secret (no timestamp, so a
replay is the same request again: the hub's dedup on webhookEventId must answer it once)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from animahub_kit.contract import line_harness
from animahub_kit.contract.line_harness import CHANNEL_SECRET, LineHarness, user_id
from animahub_kit.fakes.line_server import sign
from tests.security.surface import AUTH, MALFORMED, Case, HarnessSurface, Replayed, post, sender


def headers(signature: str | None) -> dict[str, str]:
    found = {"Content-Type": "application/json"}
    if signature is not None:
        found["X-Line-Signature"] = signature
    return found


class LineSurface(HarnessSurface):
    route = "POST /webhooks/line"

    def __init__(self, harness: LineHarness) -> None:
        super().__init__(harness)
        self.line = harness
        self.url = f"{harness.hub_url}/webhooks/line"

    def _event(self, who: str, words: str) -> dict[str, Any]:
        return self.line.fake.text_event(user_id(who), words)

    def _body(self, *events: dict[str, Any], **top: Any) -> bytes:
        payload = {"destination": line_harness.BOT_USER, "events": list(events), **top}
        return json.dumps(payload).encode()

    def _signed(self, name: str, body: bytes) -> Case:
        return Case(name, sender(self.url, body, headers(sign(CHANNEL_SECRET, body))), MALFORMED)

    def cases(self) -> list[Case]:
        raw = self._body(self._event("mallory", "forged"))
        good = sign(CHANNEL_SECRET, raw)
        event = self._event("mallory", "malformed")
        text = event["message"]
        mention = {"mentionees": [{"index": "0", "length": 4, "type": "user", "isSelf": True}]}
        return [
            Case("unsigned", sender(self.url, raw, headers(None)), AUTH),
            Case("empty signature", sender(self.url, raw, headers("")), AUTH),
            Case(
                "signed with another secret", sender(self.url, raw, headers(sign("x", raw))), AUTH
            ),
            Case(
                "body changed after signing",
                sender(self.url, raw[:-1] + b', "x": 1}', headers(good)),
                AUTH,
            ),
            Case("signature not base64", sender(self.url, raw, headers("!!!")), AUTH),
            Case(
                "not UTF-8, signature of another body",
                sender(self.url, b"\xff\xfe", headers(good)),
                AUTH,
            ),
            self._signed("signed, not JSON", b"{not json"),
            self._signed("signed, not UTF-8", b'{"events": "\xff"}'),
            self._signed("signed, a JSON array", b"[]"),
            self._signed("signed, events a string", self._body(events="all")),
            self._signed("signed, destination an object", self._body(event, destination={"id": 1})),
            self._signed(
                "signed, no webhookEventId", self._body({**event, "webhookEventId": None})
            ),
            self._signed(
                "signed, webhookEventId of 300 characters",
                self._body({**event, "webhookEventId": "0" * 300}),
            ),
            self._signed(
                "signed, message without an id",
                self._body({**event, "message": {**text, "id": None}}),
            ),
            self._signed(
                "signed, timestamp out of range", self._body({**event, "timestamp": 10**25})
            ),
            self._signed(
                "signed, userId of 300 characters",
                self._body({**event, "source": {"type": "user", "userId": "U" * 300}}),
            ),
            self._signed(
                "signed, mention index a string",
                self._body({**event, "message": {**text, "mention": mention}}),
            ),
        ]

    async def replay(self) -> Replayed:
        event = self._event("alice", "replayed once")
        raw = self._body(event)
        signed = headers(sign(CHANNEL_SECRET, raw))
        statuses = [(await post(self.url, raw, signed)).status_code for _ in range(2)]
        assert statuses == [200, 200], statuses
        return Replayed(str(event["webhookEventId"]), "echo: replayed once")


@asynccontextmanager
async def open_surface(tmp_path: Path) -> AsyncIterator[LineSurface]:
    async with line_harness.open_harness(tmp_path) as harness:
        yield LineSurface(harness)
