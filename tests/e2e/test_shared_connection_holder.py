"""The connection holder dies (issue 48, test 2): three `animahub start` processes sharing
one PostgreSQL (`[storage] shared`, docs/scale.md) and one Telegram bot, its Bot API the
fake (which ends a waiting getUpdates with 409 when another comes). One worker at a time
long-polls, through a connection lease; it is killed with SIGKILL while people write. Another
takes the poll over once the lease has lapsed and the dead one's poll has timed out: no two
polls ever meet (no 409), no update is lost, and each is answered once.

Slack's Socket Mode needs no lease (docs/scale.md): every worker connects, the fake sends each
envelope to one of the connections at random as Slack does, and sends again what is not
acknowledged; one worker killed loses and doubles nothing."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import signal
import threading
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import create_engine, text

from animahub_kit.contract.slack_harness import APP_TOKEN as SLACK_APP
from animahub_kit.contract.slack_harness import BOT_TOKEN as SLACK_BOT
from animahub_kit.contract.slack_harness import PEOPLE as SLACK_PEOPLE
from animahub_kit.contract.slack_harness import dm_channel
from animahub_kit.contract.slack_harness import populate as populate_slack
from animahub_kit.contract.slack_harness import user_id as slack_user
from animahub_kit.contract.telegram_harness import BOT_ID, BOT_NAME, PEOPLE, TOKEN, populate
from animahub_kit.fakes.slack.model import Delivery
from animahub_kit.fakes.slack_server import FakeSlack
from animahub_kit.fakes.telegram_server import FakeTelegram
from tests.e2e.hubproc import HubProcess, free_port
from tests.e2e.shared import QUIET, UNPACED, running
from tests.e2e.test_shared_processes import lease_holder_pid, wait_for
from tests.sizes import size

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.timeout(600)]
KEY = f"connection:telegram:{BOT_ID}"
MESSAGES = size(ci=6, full=60)  # each before and after the kill
SLACK_MESSAGES = size(ci=20, full=100)
T = TypeVar("T")
# Slack's retry schedule, compressed: an envelope not acknowledged in 2 s is sent again.
SLACK_RETRIES: dict[str, Any] = {"retry_delays_s": (1.0, 1.0, 2.0, 4.0), "ack_timeout_s": 2.0}


class OwnLoop:
    """An event loop on a thread of its own, for a fake platform in a test that is not
    async (the workers are processes)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, step: Awaitable[T], timeout: float = 30) -> T:
        return self.start(step).result(timeout=timeout)

    def start(self, step: Awaitable[T]) -> concurrent.futures.Future[T]:
        async def awaited() -> T:
            return await step

        return asyncio.run_coroutine_threadsafe(awaited(), self.loop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


class Threaded(OwnLoop):
    """The fake Bot API on its own loop."""

    def __init__(self) -> None:
        super().__init__()
        self.fake = FakeTelegram(token=TOKEN, bot_id=BOT_ID, username=BOT_NAME, port=free_port())
        populate(self.fake)
        self.run(self.fake.start())

    def dm(self, user: str, said: str) -> None:
        uid = PEOPLE[user]

        async def push() -> Any:
            return await self.fake.push("message", self.fake.message(uid, uid, said))

        self.run(push())

    def close(self) -> None:
        self.run(self.fake.stop())
        super().close()


@pytest.fixture
def telegram() -> Iterator[Threaded]:
    threaded = Threaded()
    try:
        yield threaded
    finally:
        threaded.close()


def three_workers(home: Path, platform: dict[str, str]) -> Iterator[list[HubProcess]]:
    with running(home, {**QUIET, **UNPACED, **platform}) as started:
        yield started


@pytest.fixture
def workers(tmp_path: Path, telegram: Threaded) -> Iterator[list[HubProcess]]:
    yield from three_workers(
        tmp_path / "home",
        {
            "ANIMAHUB_TELEGRAM__ENABLED": "true",
            "ANIMAHUB_TELEGRAM__BOT_TOKEN": TOKEN,
            "ANIMAHUB_TELEGRAM__API_URL": telegram.fake.url,
            "ANIMAHUB_TELEGRAM__POLL_TIMEOUT_S": "2",
            "ANIMAHUB_TELEGRAM__CHAT_INTERVAL_S": "0",
            "ANIMAHUB_PEOPLE__DM_POLICY": '{"telegram": "open"}',
        },
    )


def poll_holder() -> int:
    """The pid of the worker holding the bot's long poll."""
    return lease_holder_pid(KEY)


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


class SlackOnItsLoop(OwnLoop):
    """The fake Slack on its own loop, sending each Socket Mode envelope to one of the
    open connections at random, as Slack does."""

    def __init__(self) -> None:
        super().__init__()
        self.fake = FakeSlack(app_token=SLACK_APP, port=free_port(), spread=random.Random(48))
        populate_slack(self.fake)
        self.run(self.fake.start())

    def dm(self, user: str, said: str) -> concurrent.futures.Future[Delivery]:
        """Delivered until some worker acknowledges it (Slack's retries, compressed)."""
        event = self.fake.message_event(slack_user(user), dm_channel(user), said)
        return self.start(self.fake.deliver_until_acked(event, **SLACK_RETRIES))

    def close(self) -> None:
        self.run(self.fake.stop())
        super().close()


@pytest.fixture
def slack() -> Iterator[SlackOnItsLoop]:
    threaded = SlackOnItsLoop()
    try:
        yield threaded
    finally:
        threaded.close()


@pytest.fixture
def slack_workers(tmp_path: Path, slack: SlackOnItsLoop) -> Iterator[list[HubProcess]]:
    yield from three_workers(
        tmp_path / "home",
        {
            "ANIMAHUB_SLACK__ENABLED": "true",
            "ANIMAHUB_SLACK__BOT_TOKEN": SLACK_BOT,
            "ANIMAHUB_SLACK__APP_TOKEN": SLACK_APP,
            "ANIMAHUB_SLACK__API_URL": slack.fake.api_url,
        },
    )


def test_a_socket_mode_worker_killed_loses_and_doubles_nothing(
    slack_workers: list[HubProcess], slack: SlackOnItsLoop
) -> None:
    """Every worker keeps a Socket Mode connection (no lease: docs/scale.md); one is killed
    while envelopes go to the connections at random. What was sent to the dead one is not
    acknowledged and comes again on another; each message is stored and answered once."""
    wait_for(lambda: len(slack.fake.sockets) == 3, timeout=60)
    users, dying = list(SLACK_PEOPLE), slack_workers[0]
    assert dying.proc is not None
    dying.proc.send_signal(signal.SIGSTOP)  # its socket stays open and takes envelopes
    # The fake's first twenty draws (seeded) reach each of the three sockets: some go to
    # the stopped worker, unacknowledged, and are sent again.
    sent = [slack.dm(users[n % len(users)], f"before {n}") for n in range(SLACK_MESSAGES)]
    time.sleep(3)
    dying.kill()
    sent += [slack.dm(users[n % len(users)], f"after {n}") for n in range(SLACK_MESSAGES)]
    deliveries = [future.result(timeout=120) for future in sent]
    assert all(delivery.status == 200 for delivery in deliveries)  # each acknowledged
    assert any(delivery.attempt > 0 for delivery in deliveries)  # some only when sent again
    wait_for(lambda: answered() == (2 * SLACK_MESSAGES,) * 3, timeout=60)
    time.sleep(3)  # nothing stored or answered twice later either
    assert answered() == (2 * SLACK_MESSAGES,) * 3
