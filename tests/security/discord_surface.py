"""`POST /discord/interactions`: slash commands over HTTP, Ed25519-signed with a timestamp."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from nacl.signing import SigningKey

from animahub_kit.contract import discord_harness
from animahub_kit.contract.discord_harness import DiscordHarness
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


class DiscordSurface(HarnessSurface):
    route = "POST /discord/interactions"

    def __init__(self, harness: DiscordHarness) -> None:
        super().__init__(harness)
        self.discord = harness
        self.url = f"{harness.hub_url}/discord/interactions"

    def _interaction(self, who: str, subcommand: str = "pause") -> dict[str, Any]:
        fake = self.discord.fake
        named = [] if subcommand == "list" else [{"name": "name", "value": "aria"}]
        options = [{"name": subcommand, "type": 1, "options": named}]
        return fake.interaction_payload(
            fake.user(who), fake.channel_id("general"), "anima", options
        )

    def _headers(
        self, body: bytes, *, age_s: int = 0, key: SigningKey | None = None
    ) -> dict[str, str]:
        stamp = str(int(time.time()) - age_s)
        signature = (key or self.discord.signing_key).sign(stamp.encode() + body).signature.hex()
        return {
            "Content-Type": "application/json",
            "X-Signature-Ed25519": signature,
            "X-Signature-Timestamp": stamp,
        }

    def _signed(self, name: str, body: bytes, expected: frozenset[int] = MALFORMED) -> Case:
        return Case(name, sender(self.url, body, self._headers(body)), expected)

    def _changed(self, **changes: Any) -> bytes:
        """A fresh interaction (its own id) from mallory with some fields replaced."""
        return json.dumps({**self._interaction("mallory"), **changes}).encode()

    def cases(self) -> list[Case]:
        raw = json.dumps(self._interaction("mallory")).encode()
        good = self._headers(raw)
        old = self._headers(raw, age_s=SIX_MINUTES)
        options = {"id": "1", "name": "anima", "type": 1, "options": "pause aria"}
        return [
            Case("unsigned", sender(self.url, raw, {"Content-Type": "application/json"}), AUTH),
            Case(
                "signed with another key",
                sender(self.url, raw, self._headers(raw, key=SigningKey.generate())),
                AUTH,
            ),
            Case(
                "body changed after signing",
                sender(self.url, raw[:-1] + b', "extra": 1}', good),
                AUTH,
            ),
            Case(
                "signature not hex",
                sender(self.url, raw, {**good, "X-Signature-Ed25519": "zz" * 64}),
                AUTH,
            ),
            Case(
                "captured request, fresh timestamp",
                sender(
                    self.url, raw, {**old, "X-Signature-Timestamp": good["X-Signature-Timestamp"]}
                ),
                AUTH,
            ),
            Case("stale: signed six minutes ago", sender(self.url, raw, old), AUTH),
            Case(
                "signed six minutes ahead",
                sender(self.url, raw, self._headers(raw, age_s=-SIX_MINUTES)),
                AUTH,
            ),
            self._signed("signed, not JSON", b"{not json"),
            self._signed("signed, not UTF-8", b'{"type": "\xff"}'),
            self._signed("signed, a JSON array", b"[]"),
            self._signed("signed, no type", self._changed(type=None)),
            self._signed("signed, a component interaction", self._changed(type=3)),
            self._signed("signed, command without data", self._changed(data=None)),
            self._signed("signed, id not a snowflake", self._changed(id="9" * 300)),
            self._signed("signed, member.user a string", self._changed(member={"user": "mallory"})),
            self._signed("signed, options a string", self._changed(data=options)),
            self._signed("signed, channel a string", self._changed(channel="general")),
            self._signed("signed PING: answered, nothing kept", b'{"type": 1}', frozenset({200})),
        ]

    async def replay(self) -> Replayed:
        payload = self._interaction("alice", "list")
        raw = json.dumps(payload).encode()
        headers = self._headers(raw)
        first, second = [await post(self.url, raw, headers) for _ in range(2)]
        assert (first.status_code, second.status_code) == (200, 200)
        assert "Animas" in first.json()["data"]["content"], first.text  # run once
        assert "Already done" in second.json()["data"]["content"], second.text  # not again
        return Replayed(f"interaction:{payload['id']}", None)

    def platform_received(self) -> list[str]:
        fake = self.discord.fake
        answers = [str(r.get("data", {}).get("content", "")) for r in fake.interaction_responses]
        followups = [str(f.get("content", "")) for f in fake.followups]
        return [*super().platform_received(), *answers, *followups]


@asynccontextmanager
async def open_surface(tmp_path: Path) -> AsyncIterator[DiscordSurface]:
    async with discord_harness.open_harness(tmp_path) as harness:
        yield DiscordSurface(harness)
