"""A mailbox per Anima: one turn at a time per conversation, conversations in parallel.

Two kinds of work queue in it, in the same lanes and the same concurrency limit: a turn
answering a message (`TurnJob`) and a run of a delegated task (`TaskJob`, its own lane).

A handler may answer that its job must run again after a delay (the model failed and is
retried, hub/turns/retry.py): the lane waits that long and runs the same job again before
any later one, so a conversation's later messages never overtake it. The wait holds no
concurrency slot; other conversations go on meanwhile.

A handler that raises (a bug) is not dropped: the mailbox logs it and asks the crash handler
what the job does next, with the same answer (run again after a delay, or finished). The
runtime's one reports the crash in health and retries the turn within its bound
(hub/turns/retry.py), so a crashed turn's row never stays `processing` unseen.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TurnJob:
    inbox_id: str
    anima: str
    conversation: str
    person_id: str | None = None


@dataclass(frozen=True, slots=True)
class TaskJob:
    task_id: int
    anima: str

    @property
    def conversation(self) -> str:
        return f"task:{self.task_id}"

    @property
    def inbox_id(self) -> str:  # for the crash log line, like a turn's
        return self.conversation


Job = TurnJob | TaskJob
# The handler's answer: None when the job is finished, or the seconds after which to run it again.
TurnHandler = Callable[[Job], Awaitable[float | None]]
# What a job whose handler raised does next, answered like the handler: None or a delay.
CrashHandler = Callable[[Job, Exception], float | None]


class Mailbox:
    def __init__(
        self, anima: str, handler: TurnHandler, max_concurrent: int, crashed: CrashHandler
    ) -> None:
        self.anima = anima
        self._handler = handler
        self._crashed = crashed
        self._lanes: dict[str, asyncio.Queue[Job]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._slots = asyncio.Semaphore(max_concurrent)
        self.queued: set[str] = set()  # the jobs in its lanes, running or waiting

    def put(self, job: Job) -> None:
        self.queued.add(job.inbox_id)
        lane = self._lanes.setdefault(job.conversation, asyncio.Queue())
        lane.put_nowait(job)
        if job.conversation not in self._tasks:
            task = asyncio.create_task(self._drain(job.conversation), name=f"lane:{self.anima}")
            self._tasks[job.conversation] = task

    @property
    def pending(self) -> int:
        return sum(q.qsize() for q in self._lanes.values()) + len(self._tasks)

    async def _drain(self, conversation: str) -> None:
        lane = self._lanes[conversation]
        try:
            while not lane.empty():
                job = lane.get_nowait()
                while True:
                    async with self._slots:
                        again = await self._run(job)
                    if again is None:
                        break
                    await asyncio.sleep(again)  # the lane waits with it: order holds
                self.queued.discard(job.inbox_id)
        finally:
            # No await between the empty check and here, so no job can slip in unseen.
            del self._tasks[conversation]
            left = self._lanes.pop(conversation)
            while not left.empty():  # dropped unrun (a close): not queued here any more
                self.queued.discard(left.get_nowait().inbox_id)

    async def _run(self, job: Job) -> float | None:
        try:
            return await self._handler(job)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # Any error: a job dropped here would leave its message unanswered and unseen.
            log.exception("turn %s of %s crashed", job.inbox_id, self.anima)
            return self._crashed(job, exc)

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Mailboxes:
    def __init__(self, handler: TurnHandler, crashed: CrashHandler) -> None:
        self._handler = handler
        self._crashed = crashed
        self._boxes: dict[str, Mailbox] = {}

    def ensure(self, anima: str, max_concurrent: int) -> Mailbox:
        box = self._boxes.get(anima)
        if box is None:
            box = self._boxes[anima] = Mailbox(anima, self._handler, max_concurrent, self._crashed)
        return box

    def put(self, job: Job, max_concurrent: int) -> None:
        self.ensure(job.anima, max_concurrent).put(job)

    def pending(self) -> dict[str, int]:
        return {name: box.pending for name, box in self._boxes.items()}

    def has(self, inbox_id: str) -> bool:
        """Whether the job is in a lane of this process (queued, running or retrying)."""
        return any(inbox_id in box.queued for box in self._boxes.values())

    def queued(self) -> set[str]:
        """Every job id in this process's lanes (a running one's included)."""
        return set().union(*(box.queued for box in self._boxes.values()))

    def animas(self) -> list[str]:
        return list(self._boxes)

    async def drop(self, anima: str) -> set[str]:
        """Stop every job of `anima` here (another worker runs it now); the ids stopped."""
        box = self._boxes.pop(anima, None)
        if box is None:
            return set()
        stopped = set(box.queued)
        await box.close()
        return stopped

    async def close(self) -> None:
        await asyncio.gather(*(box.close() for box in self._boxes.values()))
