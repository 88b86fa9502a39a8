"""Redelivery: every platform's events delivered two and three times: one reply each.

The contract suite (tests/contract) redelivers one message twice, in sequence, after it was
answered. Here each platform gets N distinct messages, every one delivered two or three
times (alternately), the copies of all messages shuffled together and sent concurrently
(at most CONCURRENCY in flight), so a copy often arrives while the first is still being
stored or answered. Halfway through, the connection is interrupted where the platform has
one (Slack refreshes its socket, Discord's gateway asks for a reconnect, and the repeats
come over the new session). Then every message must have exactly one inbox row, one reply
delivery and one reply on the platform, and every copy must have been acknowledged (a
refused copy is redelivered by the platform again).
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable
from pathlib import Path

import pytest

from animahub_kit.contract import line_harness
from animahub_kit.contract.cases import answered_marker, replies_containing
from animahub_kit.contract.harness import eventually
from animahub_kit.fakes.line_server import sign
from tests.conftest import postgres_url
from tests.security import redelivery_targets as targets
from tests.security.common import deliveries, inbox
from tests.security.redelivery_targets import Message, Opener, Target
from tests.sizes import size

N = size(ci=10, full=100)  # distinct messages per platform
COPIES = (2, 3)  # message i is delivered COPIES[i % 2] times
CONCURRENCY = 8
PEOPLE = max(1, N // 4)  # who send them, a few each: under the hub's pacing burst
SEED = 20261129

OPENERS: dict[str, Opener] = {
    "slack-http": targets.slack,
    "slack-socket": targets.slack_socket,
    "discord-gateway": targets.discord,
    "telegram-webhook": targets.telegram_webhook,
    "telegram-polling": targets.telegram_polling,
    "line-webhook": targets.line,
}


def schedule(n: int, seed: int) -> list[tuple[int, int]]:
    """(message, copy) for every delivery, all messages' copies shuffled together; the
    copies of one message are numbered in the order they go out (0: the first)."""
    rng = random.Random(seed)
    slots = [i for i in range(n) for _ in range(COPIES[i % 2])]
    rng.shuffle(slots)
    sent: Counter[int] = Counter()
    order = []
    for i in slots:
        order.append((i, sent[i]))
        sent[i] += 1
    return order


async def bounded(work: list[Awaitable[int]], limit: int) -> list[int]:
    gate = asyncio.Semaphore(limit)

    async def one(job: Awaitable[int]) -> int:
        async with gate:
            return await job

    return await asyncio.gather(*(one(job) for job in work))


async def deliver_all(target: Target, messages: list[Message]) -> list[int]:
    order = schedule(len(messages), SEED)
    half = len(order) // 2
    first = await bounded([target.deliver(messages[i], c) for i, c in order[:half]], CONCURRENCY)
    await target.interrupt()
    rest = await bounded([target.deliver(messages[i], c) for i, c in order[half:]], CONCURRENCY)
    return first + rest


async def check_answered_once(target: Target, messages: list[Message]) -> None:
    def replies_to(message: Message) -> list[str]:
        return [r for r in target.replies() if f"echo: {message.text}" in r]

    await eventually(lambda: all(replies_to(m) for m in messages), timeout_s=20 + N * 0.5)
    # Whatever a late copy set going has finished once one more message is answered.
    settle = target.prepare("settled after the copies", PEOPLE)
    assert await target.deliver(settle, 0) == 200
    await eventually(lambda: replies_to(settle))

    rows = Counter(row.text for row in inbox(target.hub))
    row_ids = {row.text: row.id for row in inbox(target.hub)}
    replies = Counter(d.inbox_id for d in deliveries(target.hub))
    wrong = []
    for message in messages:
        text = message.text  # as stored: the bot's mention is not part of what was said
        found = (rows[text], replies[row_ids.get(text)], len(replies_to(message)))
        if found != (1, 1, 1):
            wrong.append(f"{text}: {found} (inbox rows, reply deliveries, replies posted)")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("platform", list(OPENERS))
async def test_every_event_delivered_two_or_three_times_is_answered_once(
    platform: str, tmp_path: Path
) -> None:
    async with OPENERS[platform](tmp_path) as target:
        messages = [target.prepare(f"{platform} message {i}.", i % PEOPLE) for i in range(N)]
        statuses = await deliver_all(target, messages)
        assert set(statuses) == {200}, Counter(statuses)
        assert len(statuses) == sum(COPIES[i % 2] for i in range(N))
        await check_answered_once(target, messages)


@pytest.mark.parametrize(
    "database", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_web_chat_resent_with_the_same_message_id_is_answered_once(
    database: str, tmp_path: Path
) -> None:
    """The web client resends after a timeout: the same message_id, concurrently with the
    first; on PostgreSQL too, where two inserts of one key race for the unique index."""
    url = f"sqlite:///{tmp_path / 'hub.db'}" if database == "sqlite" else postgres_url()
    async with targets.web(url)(tmp_path) as target:
        messages = [target.prepare(f"web message {i}.", i % PEOPLE) for i in range(N)]
        statuses = await deliver_all(target, messages)
        assert set(statuses) == {200}, Counter(statuses)
        await check_answered_once(target, messages)


def test_the_schedule_sends_two_and_three_copies_interleaved() -> None:
    order = schedule(10, SEED)
    per_message = Counter(i for i, _ in order)
    assert [per_message[i] for i in range(10)] == [2, 3] * 5
    assert [i for i, _ in order] != sorted(i for i, _ in order)  # messages interleaved
    for i in range(10):
        assert [c for j, c in order if j == i] == list(range(per_message[i]))


async def test_a_line_batch_redelivered_whole_and_overlapping_is_answered_once(
    tmp_path: Path,
) -> None:
    """LINE packs several events into one request and redelivers a request it got no 200
    for as a whole: a batch whose events were partly stored already, sent again alongside
    a batch that overlaps it, concurrently."""
    async with line_harness.open_harness(tmp_path) as h:
        fake = h.fake
        events = [fake.text_event(line_harness.user_id("bob"), f"batched {i}.") for i in range(6)]
        first = await fake.deliver(*events[:3])
        assert first.status == 200

        def again(batch: list[dict[str, object]]) -> bytes:
            marked = [{**e, "deliveryContext": {"isRedelivery": True}} for e in batch]
            return fake.payload(marked)

        batches = [again(events[:3]), again(events[1:5]), again(events), again(events[3:])]
        sent = await asyncio.gather(
            *(fake.post_webhook(raw, sign(line_harness.CHANNEL_SECRET, raw)) for raw in batches)
        )
        assert [d.status for d in sent] == [200] * len(batches)
        await eventually(
            lambda: all(replies_containing(h, f"echo: batched {i}.") for i in range(6))
        )
        await answered_marker(h)
        rows = Counter(row.text for row in inbox(h.hub))
        for i in range(6):
            assert rows[f"batched {i}."] == 1, rows
            assert len(replies_containing(h, f"echo: batched {i}.")) == 1
