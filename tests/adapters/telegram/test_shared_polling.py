"""One long poll per bot across hub workers (`[storage] shared`, hub/store/connections.py),
with the real python-telegram-bot against the fake Bot API, which ends a poll with 409 when
another comes while it waits: two workers on one bot never overlap, the one that stops
hands the poll over, and no update is lost or answered twice."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from animahub_kit.contract.harness import eventually
from animahub_kit.contract.telegram_harness import (
    BOT_ID,
    BOT_NAME,
    TOKEN,
    TelegramHarness,
    open_harness,
    populate,
)
from animahub_kit.fakes.telegram_server import FakeTelegram
from hub.store.leases import holders
from tests.conftest import postgres_url

pytestmark = pytest.mark.postgres
KEY = f"connection:telegram:{BOT_ID}"


def echoed(h: TelegramHarness, text: str) -> int:
    return sum(m.text == f"echo: {text}" for m in h.fake.messages)


def all_echoed(h: TelegramHarness, prefix: str) -> bool:
    """Each of the three messages `prefix 0..2` answered exactly once."""
    return all(echoed(h, f"{prefix} {n}") == 1 for n in range(3))


def poller(*workers: TelegramHarness) -> TelegramHarness:
    """The worker holding the bot's poll now."""
    [(holder, _epoch, _until)] = holders(workers[0].hub.db, [KEY]).values()
    [found] = [w for w in workers if w.hub.partitions and w.hub.partitions.me == holder]
    return found


async def test_two_workers_never_poll_one_bot_at_once_and_hand_the_poll_over(
    tmp_path: Path,
) -> None:
    shared = {
        "storage": {"database_url": postgres_url(), "shared": True, "lease_ttl_s": 3.0},
        "memory": {"enabled": False},
    }
    async with FakeTelegram(token=TOKEN, bot_id=BOT_ID, username=BOT_NAME) as fake:
        populate(fake)
        async with contextlib.AsyncExitStack() as first, contextlib.AsyncExitStack() as second:
            a = await first.enter_async_context(
                open_harness(tmp_path / "a", webhook=False, fake=fake, sections=shared)
            )
            b = await second.enter_async_context(
                open_harness(tmp_path / "b", webhook=False, fake=fake, sections=shared)
            )
            for n in range(3):
                await a.dm("alice", f"before {n}")
            await eventually(lambda: all_echoed(a, "before"), timeout_s=20)
            holder = poller(a, b)
            other = b if holder is a else a

            # The holder stops (SIGTERM): its poll is handed over, not left to lapse, and
            # what arrives meanwhile is taken by the other worker.
            await (first if holder is a else second).aclose()
            for n in range(3):
                await other.dm("bob", f"during {n}")
            await eventually(lambda: all_echoed(other, "during"), timeout_s=30)
            assert poller(other) is other

        assert fake.overlaps == 0  # no two polls ever met: no 409
        assert all_echoed(a, "before")
        assert fake.pending() == []  # every update confirmed
