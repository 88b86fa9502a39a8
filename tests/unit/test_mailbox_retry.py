"""A job its handler asks to run again waits in its lane: later messages stay behind it."""

from __future__ import annotations

import asyncio

from hub.turns.mailbox import Job, Mailbox, TurnJob
from tests.unit.test_mailbox import drained, unexpected


async def test_a_job_run_again_later_keeps_its_place_in_the_lane() -> None:
    runs: list[str] = []
    again = {"m1": 2}  # m1 fails twice, then is answered
    waiting = asyncio.Event()

    async def handler(job: Job) -> float | None:
        runs.append(job.inbox_id)
        left = again.get(job.inbox_id, 0)
        if left:
            again[job.inbox_id] = left - 1
            waiting.set()
            return 0.01
        return None

    box = Mailbox("aria", handler, 1, unexpected)
    box.put(TurnJob("m1", "aria", "c1"))
    await waiting.wait()  # m1 failed once and waits for its next attempt
    box.put(TurnJob("m2", "aria", "c1"))
    box.put(TurnJob("other", "aria", "c2"))
    await drained(box)
    mine = [r for r in runs if r != "other"]
    assert mine == ["m1", "m1", "m1", "m2"]  # m2 never overtakes m1
    # the wait holds no slot: the other conversation ran while m1 waited, with one slot
    assert runs.index("other") < len(runs) - 1
