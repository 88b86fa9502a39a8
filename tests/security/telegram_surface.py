"""`POST /webhooks/telegram`: updates authenticated by the secret token alone (no signature,
no timestamp, so a replay is the same request again: the hub's dedup must answer it once)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from adapters.telegram.webhook import SECRET_HEADER
from animahub_kit.contract import telegram_harness
from animahub_kit.contract.telegram_harness import PEOPLE, SECRET, TelegramHarness
from tests.security.surface import AUTH, MALFORMED, Case, HarnessSurface, Replayed, post, sender

JSON_TYPE = {"Content-Type": "application/json"}


class TelegramSurface(HarnessSurface):
    route = "POST /webhooks/telegram"

    def __init__(self, harness: TelegramHarness) -> None:
        super().__init__(harness)
        self.telegram = harness
        self.url = str(harness.fake.webhook_target)

    def _update(self, who: str, words: str, **changes: Any) -> dict[str, Any]:
        fake = self.telegram.fake
        message = {**fake.message(PEOPLE[who], PEOPLE[who], words), **changes}
        return fake.update("message", message)

    def _with_secret(self, name: str, body: bytes) -> Case:
        return Case(name, sender(self.url, body, {**JSON_TYPE, SECRET_HEADER: SECRET}), MALFORMED)

    def _secret(self, name: str, secret: str | None) -> Case:
        raw = json.dumps(self._update("mallory", "forged")).encode()
        headers = dict(JSON_TYPE) if secret is None else {**JSON_TYPE, SECRET_HEADER: secret}
        return Case(name, sender(self.url, raw, headers), AUTH)

    def cases(self) -> list[Case]:
        def changed(**changes: Any) -> bytes:
            return json.dumps(self._update("mallory", "malformed", **changes)).encode()

        chat = self.telegram.fake.message(PEOPLE["mallory"], PEOPLE["mallory"], "")["chat"]
        entity = [{"type": "mention", "offset": "0", "length": 4}]
        return [
            self._secret("no secret token", None),
            self._secret("empty secret token", ""),
            self._secret("another secret token", "not-the-secret"),
            self._secret("the secret token plus a suffix", SECRET + "x"),
            self._secret("the secret token's prefix", SECRET[:-1]),
            self._secret("the secret token in capitals", SECRET.upper()),
            self._with_secret("not JSON", b"{not json"),
            self._with_secret("not UTF-8", b'{"update_id": "\xff"}'),
            self._with_secret("a JSON array", b"[]"),
            self._with_secret("no update_id", json.dumps({"message": {"text": "hi"}}).encode()),
            self._with_secret(
                "message a string", json.dumps({"update_id": 7, "message": "hi"}).encode()
            ),
            self._with_secret("message without chat", changed(chat=None)),
            self._with_secret("text an object", changed(text={"hi": 1})),
            self._with_secret("chat id a string", changed(chat={**chat, "id": "x" * 250})),
            self._with_secret("date out of range", changed(date=10**20)),
            self._with_secret("entity offset a string", changed(entities=entity)),
            self._with_secret(
                "from without first_name", changed(**{"from": {"id": 5, "is_bot": False}})
            ),
        ]

    async def replay(self) -> Replayed:
        update = self._update("alice", "replayed once")
        raw = json.dumps(update).encode()
        headers = {**JSON_TYPE, SECRET_HEADER: SECRET}
        statuses = [(await post(self.url, raw, headers)).status_code for _ in range(2)]
        assert statuses == [200, 200], statuses
        message = update["message"]
        return Replayed(f"{message['chat']['id']}:{message['message_id']}", "echo: replayed once")


@asynccontextmanager
async def open_surface(tmp_path: Path) -> AsyncIterator[TelegramSurface]:
    async with telegram_harness.open_harness(tmp_path) as harness:
        yield TelegramSurface(harness)
