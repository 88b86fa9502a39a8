"""A job whose handler raises is handed to the crash handler, which may run it again in its
lane: the crash is neither dropped nor lets a later message overtake it."""

from __future__ import annotations

from hub.turns.mailbox import Job, Mailbox, TurnJob
from tests.unit.test_mailbox import drained


async def test_a_crashed_job_run_again_keeps_its_place_in_the_lane() -> None:
    runs: list[str] = []
    crashes: list[str] = []

    async def handler(job: Job) -> None:
        runs.append(job.inbox_id)
        if job.inbox_id == "m1" and runs.count("m1") == 1:
            raise KeyError("a bug")

    def crashed(job: Job, exc: Exception) -> float | None:
        crashes.append(f"{job.inbox_id}: {exc!r}")
        return 0.01  # run it again shortly

    box = Mailbox("aria", handler, 1, crashed)
    for name in ("m1", "m2"):
        box.put(TurnJob(name, "aria", "c1"))
    await drained(box)
    assert crashes == ["m1: KeyError('a bug')"]
    assert runs == ["m1", "m1", "m2"]
