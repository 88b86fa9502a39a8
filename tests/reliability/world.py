"""The platforms a reliability run talks to: the four fakes in an event loop of their own
thread, so they outlive every hub the run kills, and the fake model in its own process.

`World.hub_env` points a real `animahub start` at them: each real SDK (slack-bolt in Socket
Mode, discord.py on the gateway, python-telegram-bot long polling, line-bot-sdk with the
LINE fake posting webhooks to the hub's fixed port) through the adapters' own settings
sections, as ANIMAHUB_<SECTION>__<KEY> variables.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from animahub_kit.fakes.discord_server import FakeDiscord
from animahub_kit.fakes.faults import FaultPolicy
from animahub_kit.fakes.line_server import FakeLine
from animahub_kit.fakes.slack_server import FakeSlack
from animahub_kit.fakes.telegram_server import FakeTelegram
from tests.e2e.hubproc import free_port

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
SLACK_BOT_TOKEN = "xoxb-reliability"
SLACK_APP_TOKEN = "xapp-1-reliability"
SLACK_BOT_USER = "U0BOT"
SLACK_TEAM = "T0TEAM"


@dataclass(frozen=True)
class FakeModel:
    """The fake OpenAI server in its own process: answers `echo: <last user message>`."""

    url: str
    proc: subprocess.Popen[str]

    def requests(self) -> int:
        return len(httpx.get(f"{self.url}/_control/requests", timeout=10).json())

    def env(self) -> dict[str, str]:
        return {
            "ANIMAHUB_LLM__MODEL": "openai/fake",
            "ANIMAHUB_LLM__API_BASE": f"{self.url}/v1",
            "ANIMAHUB_LLM__API_KEY": "x",
        }


@contextmanager
def fake_model() -> Iterator[FakeModel]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "animahub_kit.fakes.openai_server", "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("READY"), line
    try:
        yield FakeModel(f"http://127.0.0.1:{port}", proc)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class World:
    """The fake Slack, Discord, Telegram and LINE, served from a background event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.slack, self.discord, self.telegram, self.line = self.run(self._make())

    async def _make(self) -> tuple[FakeSlack, FakeDiscord, FakeTelegram, FakeLine]:
        slack = FakeSlack(app_token=SLACK_APP_TOKEN, team_id=SLACK_TEAM, port=free_port())
        discord = FakeDiscord(port=free_port())
        telegram = FakeTelegram(port=free_port())
        line = FakeLine(port=free_port())
        for fake in (slack, discord, telegram, line):
            await fake.start()
        slack.add_bot(SLACK_BOT_TOKEN, SLACK_BOT_USER, "B0BOT", "animahub")
        return slack, discord, telegram, line

    def run(self, work: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        """Run a coroutine in the fakes' loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def call(self, work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start a coroutine in the fakes' loop without waiting (a load generator)."""
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    def set_faults(self, policy: FaultPolicy | None) -> None:
        for fake in (self.slack, self.discord, self.telegram, self.line):
            fake.faults = policy

    def hub_env(self, hub_port: int) -> dict[str, str]:
        self.line.webhook_url = f"http://127.0.0.1:{hub_port}/webhooks/line"
        return {
            "ANIMAHUB_SLACK__ENABLED": "true",
            "ANIMAHUB_SLACK__BOT_TOKEN": SLACK_BOT_TOKEN,
            "ANIMAHUB_SLACK__APP_TOKEN": SLACK_APP_TOKEN,
            "ANIMAHUB_SLACK__API_URL": self.slack.api_url,
            "ANIMAHUB_DISCORD__ENABLED": "true",
            "ANIMAHUB_DISCORD__BOT_TOKEN": self.discord.bot_token,
            "ANIMAHUB_DISCORD__API_URL": self.discord.api_url,
            "ANIMAHUB_DISCORD__GATEWAY_URL": self.discord.gateway_url,
            # Strangers write here by the dozen: every DM open, as in tests/conftest.py
            # (named: the hub.toml `init` writes sets pairing for these two, and it merges).
            "ANIMAHUB_PEOPLE__DM_POLICY": '{"telegram": "open", "line": "open"}',
            "ANIMAHUB_TELEGRAM__ENABLED": "true",
            "ANIMAHUB_TELEGRAM__BOT_TOKEN": self.telegram.token,
            "ANIMAHUB_TELEGRAM__API_URL": self.telegram.base_url,
            # Pacing is the hub's courtesy to real Telegram's flood limits (the fake enforces
            # none); at 1 s per chat and 20 a minute per group a run would take an hour.
            "ANIMAHUB_TELEGRAM__CHAT_INTERVAL_S": "0.1",
            "ANIMAHUB_TELEGRAM__GROUP_PER_MINUTE": "600",
            "ANIMAHUB_LINE__ENABLED": "true",
            "ANIMAHUB_LINE__CHANNEL_SECRET": self.line.channel_secret,
            "ANIMAHUB_LINE__CHANNEL_ACCESS_TOKEN": self.line.access_token,
            "ANIMAHUB_LINE__API_URL": self.line.url,
            "ANIMAHUB_LINE__DATA_API_URL": self.line.url,
            # The load is 20 people sending at machine speed, in bursts after each restart:
            # pacing would rightly slow them and tell them so, which is the pacing suite's
            # business (tests/unit/test_pacing.py); here every bot message is a reply.
            "ANIMAHUB_RUNTIME__PERSON_MESSAGES_PER_MINUTE": "100000",
            "ANIMAHUB_RUNTIME__PERSON_BURST": "100000",
            "ANIMAHUB_RUNTIME__CHANNEL_MESSAGES_PER_MINUTE": "100000",
            "ANIMAHUB_RUNTIME__CHANNEL_BURST": "100000",
            # Heartbeats and session summaries are other suites' business: here every bot
            # message must be the reply to a message of the load.
            "ANIMAHUB_SCHEDULER__ENABLED": "false",
        }

    def close(self) -> None:
        async def stop_all() -> None:
            for fake in (self.slack, self.discord, self.telegram, self.line):
                await fake.stop()

        self.run(stop_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()
