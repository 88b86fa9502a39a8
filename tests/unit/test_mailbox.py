"""Mailboxes: one turn at a time, in order, per conversation; conversations in parallel."""

from __future__ import annotations

import asyncio

from hub.turns.mailbox import Job, Mailbox, Mailboxes, TurnJob


def unexpected(job: Job, exc: Exception) -> float | None:
    """A crash handler for tests whose handler never raises."""
    raise AssertionError(f"{job} crashed: {exc!r}")


async def drained(box: Mailbox) -> None:
    for _ in range(1000):
        if not box.pending:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("mailbox did not drain")


async def test_turns_of_one_conversation_run_one_at_a_time_in_order() -> None:
    running: list[str] = []
    done: list[str] = []
    overlap = False

    async def handler(job: Job) -> None:
        nonlocal overlap
        overlap = overlap or any(j.startswith("c1") for j in running)
        running.append(job.inbox_id)
        await asyncio.sleep(0.01)
        running.remove(job.inbox_id)
        done.append(job.inbox_id)

    box = Mailbox("aria", handler, 8, unexpected)
    for i in range(5):
        box.put(TurnJob(f"c1-{i}", "aria", "c1"))
    await drained(box)
    assert done == [f"c1-{i}" for i in range(5)]
    assert not overlap


async def test_different_conversations_run_concurrently_up_to_the_limit() -> None:
    active = 0
    peak = 0
    release = asyncio.Event()

    async def handler(job: Job) -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await release.wait()
        active -= 1

    box = Mailbox("aria", handler, 3, unexpected)
    for i in range(6):
        box.put(TurnJob(f"m{i}", "aria", f"conv{i}"))
    for _ in range(20):
        await asyncio.sleep(0)
    assert peak == 3  # six conversations, three slots
    release.set()
    await drained(box)
    assert active == 0


async def test_a_crashing_turn_does_not_stop_the_lane() -> None:
    done: list[str] = []

    async def handler(job: Job) -> None:
        if job.inbox_id == "bad":
            raise RuntimeError("boom")
        done.append(job.inbox_id)

    def crashed(job: Job, exc: Exception) -> None:
        told.append((job.inbox_id, str(exc)))

    told: list[tuple[str, str]] = []
    box = Mailbox("aria", handler, 1, crashed)
    for name in ("a", "bad", "b"):
        box.put(TurnJob(name, "aria", "c"))
    await drained(box)
    assert done == ["a", "b"]
    assert told == [("bad", "boom")]  # the crash is handed on, not only logged


async def test_mailboxes_are_per_anima_and_close_cancels() -> None:
    started = asyncio.Event()

    async def handler(job: Job) -> None:
        started.set()
        await asyncio.sleep(60)

    boxes = Mailboxes(handler, unexpected)
    boxes.put(TurnJob("x", "aria", "c"), 2)
    boxes.put(TurnJob("y", "kai", "c"), 2)
    await started.wait()
    assert boxes.pending() == {"aria": 1, "kai": 1}
    await boxes.close()
    assert boxes.pending() == {"aria": 0, "kai": 0}
