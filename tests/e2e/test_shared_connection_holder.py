"""The connection holder dies (issue 48, test 2): three `animahub start` processes sharing
one PostgreSQL (`[storage] shared`, docs/scale.md) and one Telegram bot, its Bot API the
fake (which ends a waiting getUpdates with 409 when another comes). One worker at a time
long-polls, through a connection lease; it is killed with SIGKILL while people write. Another
takes the poll over once the lease has lapsed and the dead one's poll has timed out: no two
polls ever meet (no 409), no update is lost, and each is answered once.

Slack's Socket Mode needs no lease (docs/scale.md: every worker connects, Slack sends each
event to one of them and redelivers what is not acknowledged); it is not in this test."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import create_engine, text

from animahub_kit.contract.telegram_harness import BOT_ID, BOT_NAME, PEOPLE, TOKEN, populate
from animahub_kit.fakes.telegram_server import FakeTelegram
from tests.conftest import postgres_url
from tests.e2e.hubproc import HubProcess, cli, free_port
from tests.e2e.test_shared_processes import wait_for
from tests.sizes import size

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.timeout(600)]
KEY = f"connection:telegram:{BOT_ID}"
MESSAGES = size(ci=6, full=60)  # each before and after the kill
T = TypeVar("T")


class Threaded:
    """The fake Bot API on an event loop of its own thread, for a test that is not async."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.fake = FakeTelegram(token=TOKEN, bot_id=BOT_ID, username=BOT_NAME, port=free_port())
        populate(self.fake)
        self.run(self.fake.start())

    def run(self, step: Awaitable[T]) -> T:
        async def awaited() -> T:
            return await step

        return asyncio.run_coroutine_threadsafe(awaited(), self.loop).result(timeout=30)

    def dm(self, user: str, said: str) -> None:
        uid = PEOPLE[user]

        async def push() -> Any:
            return await self.fake.push("message", self.fake.message(uid, uid, said))

        self.run(push())

    def close(self) -> None:
        self.run(self.fake.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


@pytest.fixture
def telegram() -> Iterator[Threaded]:
    threaded = Threaded()
    try:
        yield threaded
    finally:
        threaded.close()


@pytest.fixture
def workers(tmp_path: Path, telegram: Threaded) -> Iterator[list[HubProcess]]:
    home, url = tmp_path / "home", postgres_url()
    made = cli(home, "init", "--demo", ANIMAHUB_STORAGE__DATABASE_URL=url)
    assert made.returncode == 0, made.stdout + made.stderr
    env = {
        "ANIMAHUB_STORAGE__DATABASE_URL": url,
        "ANIMAHUB_STORAGE__SHARED": "true",
        "ANIMAHUB_STORAGE__LEASE_TTL_S": "6",
        "ANIMAHUB_MEMORY__ENABLED": "false",
        "ANIMAHUB_SCHEDULER__ENABLED": "false",
        "ANIMAHUB_TELEGRAM__ENABLED": "true",
        "ANIMAHUB_TELEGRAM__BOT_TOKEN": TOKEN,
        "ANIMAHUB_TELEGRAM__API_URL": telegram.fake.url,
        "ANIMAHUB_TELEGRAM__POLL_TIMEOUT_S": "2",
        "ANIMAHUB_TELEGRAM__CHAT_INTERVAL_S": "0",
        "ANIMAHUB_PEOPLE__DM_POLICY": '{"telegram": "open"}',
        "ANIMAHUB_RUNTIME__PERSON_MESSAGES_PER_MINUTE": "100000",
        "ANIMAHUB_RUNTIME__PERSON_BURST": "100000",
    }
    started = [HubProcess(home, free_port(), **env).launch() for _ in range(3)]
    try:
        yield [worker.ready(120) for worker in started]
    finally:
        for worker in started:
            if worker.proc is not None and worker.proc.poll() is None:
                worker.kill()


def poll_holder() -> int:
    """The pid of the worker holding the bot's long poll (a worker's name ends in its pid
    and a random tail: hub/store/ownership.py)."""
    engine = create_engine(os.environ["ANIMAHUB_TEST_DATABASE_URL"])
    query = text("SELECT holder FROM lease WHERE key = :k AND expires_at > now()")
    try:
        with engine.connect() as conn:
            holder = wait_for(lambda: conn.execute(query, {"k": KEY}).scalar())
    finally:
        engine.dispose()
    return int(str(holder).split(":")[-2])


def answered() -> tuple[int, int, int]:
    """Updates stored, answered, and answers sent (one reply delivery each: its chunks are
    one delivery)."""
    engine = create_engine(os.environ["ANIMAHUB_TEST_DATABASE_URL"])
    query = text(
        "SELECT (SELECT count(*) FROM inbox), "
        "(SELECT count(*) FROM inbox WHERE status = 'done'), "
        "(SELECT count(*) FROM delivery WHERE kind = 'reply' AND status = 'sent')"
    )
    try:
        with engine.connect() as conn:
            stored, done, sent = conn.execute(query).one()
    finally:
        engine.dispose()
    return int(stored), int(done), int(sent)


def test_the_poll_holder_killed_is_replaced_with_no_409_and_no_update_lost_or_doubled(
    workers: list[HubProcess], telegram: Threaded
) -> None:
    users = list(PEOPLE)
    for n in range(MESSAGES):
        telegram.dm(users[n % len(users)], f"before {n}")
    wait_for(lambda: answered() == (MESSAGES,) * 3, timeout=60)

    holder_pid = poll_holder()
    [holder] = [w for w in workers if w.proc is not None and w.proc.pid == holder_pid]
    holder.kill()
    killed_at = time.monotonic()
    for n in range(MESSAGES):
        telegram.dm(users[n % len(users)], f"after {n}")
    wait_for(lambda: answered() == (2 * MESSAGES,) * 3, timeout=90)
    took_s = time.monotonic() - killed_at

    assert poll_holder() != holder_pid
    assert telegram.fake.overlaps == 0  # no two polls ever met: no 409
    assert telegram.fake.pending() == []  # every update confirmed
    time.sleep(3)  # nothing stored or answered twice later either
    assert answered() == (2 * MESSAGES,) * 3
    replies = {m.chat_id for m in telegram.fake.messages}
    assert replies == {PEOPLE[user] for user in users}  # to each person, in their own chat
    print(f"answered again {took_s:.1f} s after the kill (lease 6 s, poll 2 s + 5 s)")
