"""`POST /slack/events`: the Events API and slash commands over HTTP, v0-signed."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from animahub_kit.contract import slack_harness
from animahub_kit.contract.slack_harness import CHANNELS, SIGNING_SECRET, SlackHarness, user_id
from tests.security.surface import (
    AUTH,
    MALFORMED,
    SIX_MINUTES,
    Case,
    HarnessSurface,
    Replayed,
    post,
    sender,
)

JSON_TYPE = {"Content-Type": "application/json"}
FORM_TYPE = {"Content-Type": "application/x-www-form-urlencoded"}


def signature(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed(body: bytes, *, age_s: int = 0, secret: str = SIGNING_SECRET) -> dict[str, Any]:
    stamp = str(int(time.time()) - age_s)
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature(secret, stamp, body)}


class SlackSurface(HarnessSurface):
    route = "POST /slack/events"

    def __init__(self, harness: SlackHarness) -> None:
        super().__init__(harness)
        self.slack = harness
        self.url = f"{harness.hub_url}/slack/events"

    def _callback(self, who: str, text: str) -> dict[str, Any]:
        fake = self.slack.fake
        event = fake.message_event(user_id(who), CHANNELS["general"], f"<@U0BOT> {text}")
        return fake.callback(event)

    def _json(self, name: str, body: bytes, expected: frozenset[int] = MALFORMED) -> Case:
        return Case(name, sender(self.url, body, {**JSON_TYPE, **signed(body)}), expected)

    def _form(self, name: str, body: bytes, headers: dict[str, Any]) -> Case:
        return Case(name, sender(self.url, body, {**FORM_TYPE, **headers}), AUTH)

    def cases(self) -> list[Case]:
        raw = json.dumps(self._callback("mallory", "forged")).encode()
        good = {**JSON_TYPE, **signed(raw)}
        now = good["X-Slack-Request-Timestamp"]
        old = {**JSON_TYPE, **signed(raw, age_s=SIX_MINUTES)}
        return [
            Case("unsigned", sender(self.url, raw, JSON_TYPE), AUTH),
            Case(
                "timestamp, no signature",
                sender(self.url, raw, {**JSON_TYPE, "X-Slack-Request-Timestamp": now}),
                AUTH,
            ),
            Case(
                "signed with another secret",
                sender(self.url, raw, {**JSON_TYPE, **signed(raw, secret="not-it")}),
                AUTH,
            ),
            Case(
                "body changed after signing",
                sender(self.url, raw[:-1] + b', "extra": 1}', good),
                AUTH,
            ),
            Case(
                "captured request, fresh timestamp",
                sender(self.url, raw, {**old, "X-Slack-Request-Timestamp": now}),
                AUTH,
            ),
            Case(
                "non-numeric timestamp",
                sender(self.url, raw, {**good, "X-Slack-Request-Timestamp": "soon"}),
                AUTH,
            ),
            Case(
                "non-ASCII signature",
                sender(self.url, raw, {**good, "X-Slack-Signature": b"v0=\xe9\xe9"}),
                AUTH,
            ),
            Case("stale: signed six minutes ago", sender(self.url, raw, old), AUTH),
            Case(
                "signed six minutes ahead",
                sender(self.url, raw, {**JSON_TYPE, **signed(raw, age_s=-SIX_MINUTES)}),
                AUTH,
            ),
            *self._malformed_events(),
            *self._commands(),
        ]

    def _malformed_events(self) -> list[Case]:
        body = self._callback("mallory", "malformed")

        def event(**changes: Any) -> bytes:
            return json.dumps({**body, "event": {**body["event"], **changes}}).encode()

        return [
            self._json("signed, not JSON", b"{not json"),
            self._json("signed, not UTF-8", b'{"type": "\xff"}'),
            self._json("signed, a JSON array", b"[]"),
            self._json("signed, event a string", json.dumps({**body, "event": "hi"}).encode()),
            self._json("signed, channel an object", event(channel={"id": "C0GENERAL"})),
            self._json("signed, ts out of range", event(ts="1" * 300)),
            self._json("signed, user an object", event(user={"id": "U0ALICE"})),
            self._json("signed, files a string", event(files="report.pdf")),
        ]

    def _commands(self) -> list[Case]:
        form = self.slack.fake.command_payload(
            user_id("mallory"), CHANNELS["general"], "/anima", "pause aria"
        )

        def command(*without: str) -> bytes:
            return urlencode({k: v for k, v in form.items() if k not in without}).encode()

        cmd = command()
        return [
            self._form("slash command, unsigned", cmd, {}),
            self._form("slash command, another secret", cmd, signed(cmd, secret="not-it")),
            self._form("slash command, stale", cmd, signed(cmd, age_s=SIX_MINUTES)),
            self._form_signed("slash command, no user_id", command("user_id")),
            self._form_signed("slash command, no trigger_id", command("trigger_id")),
        ]

    def _form_signed(self, name: str, body: bytes) -> Case:
        return Case(name, sender(self.url, body, {**FORM_TYPE, **signed(body)}), MALFORMED)

    async def replay(self) -> Replayed:
        body = self._callback("alice", "replayed once")
        raw = json.dumps(body).encode()
        headers = {**JSON_TYPE, **signed(raw)}
        statuses = [(await post(self.url, raw, headers)).status_code for _ in range(2)]
        assert statuses == [200, 200], statuses  # inside the window: a duplicate, acknowledged
        event = body["event"]
        return Replayed(f"{event['channel']}:{event['ts']}", "echo: replayed once")

    def platform_received(self) -> list[str]:
        fake = self.slack.fake
        answers = [str(r.get("text", "")) for r in fake.responses]
        ephemeral = [str(c.params.get("text", "")) for c in fake.calls_of("chat.postEphemeral")]
        return [*super().platform_received(), *answers, *ephemeral]


@asynccontextmanager
async def open_surface(tmp_path: Path) -> AsyncIterator[SlackSurface]:
    async with slack_harness.open_harness(tmp_path) as harness:
        yield SlackSurface(harness)
