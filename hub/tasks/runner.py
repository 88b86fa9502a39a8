"""Running a delegated task: the assignee's own turn, its report, and what happens when not.

A task starts at once in its assignee's mailbox (a lane of its own, within the Anima's
concurrency). A run takes it todo → running (compare-and-set: one runner wins), thinks with
the task as input (offline: a digest of the task and what memory recalls), and commits in
one transaction the `done` with its report, the report's deliveries (the conversation that
asked, the task's `report_to`, the assignee's `report_to`) and the report in the manager's
conversation, so its next turn there sees it. A run that fails (the model, a timeout) goes
back to todo and is tried again after a delay; the last failure is `failed`, told to the
conversation that asked and to the manager. A task past its due time is told there once.
After a stop, a task that was running is run again (nothing of it was committed); one that
was done is not. The memory notes written after the commit are written again at start.
A task's own `report_to` is checked again as it runs, with the rights of the person who
asked then (hub/tasks/addressing.py): what was never theirs to address (a task made before the
check, an account since moved) is recorded as a failed delivery, never posted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import Connection

from hub.delivery.targets import Resolved
from hub.messages import DeliveryKind
from hub.model.client import LLMError
from hub.store.models import OPEN_TASK_STATES, TaskState
from hub.store.ownership import Ownership, SoleOwner
from hub.tasks.board import TaskError, TaskView
from hub.tasks.parts import Names, Pauses, TaskParts, TaskQueue
from hub.tasks.telling import TaskTelling
from hub.tasks.text import (
    failed_text,
    late_text,
    offline_report,
    posted_report,
    task_prompt,
    task_query,
)
from hub.turns.mailbox import TaskJob
from hub.turns.thinking import Thinker

log = logging.getLogger(__name__)
_REPLAY = timedelta(days=1)  # how far back notes cut off by a stop are written again


class TaskRunner:
    def __init__(
        self,
        parts: TaskParts,
        thinker: Thinker,
        *,
        queue: TaskQueue,
        paused: Pauses,
        names: Names,
        now: Callable[[], datetime],
        runs: bool = True,
        ownership: Ownership | None = None,
    ) -> None:
        self._db = parts.db
        self._board = parts.board
        self._animas = parts.animas
        self._thinker = thinker
        self._addressing = parts.addressing
        self._limits = parts.limits
        self._now = now
        self._queue = queue
        self._paused = paused
        self.telling = TaskTelling(parts, names, now)
        # False in a CLI command's short-lived hub: tasks wait on the board for the hub.
        self.runs = runs
        # Which Animas' tasks this worker runs (docs/scale.md): all, for the one hub.
        self._ownership: Ownership = ownership or SoleOwner()
        self._queued: set[int] = set()  # queued, running or waiting to retry in this process
        self._retries: dict[int, asyncio.TimerHandle] = {}

    # starting ---------------------------------------------------------------------------

    def start(self, task: TaskView) -> None:
        if task.id in self._queued or not self.runs or not self._ownership.holds(task.assignee):
            return  # another worker's: its own sweep starts it
        self._queued.add(task.id)
        self._queue.submit(TaskJob(task.id, task.assignee))

    def recover(self) -> int:
        """At start: what was running was cut off by the stop; run it again, with the rest."""
        if not self.runs:
            return 0
        cut_off = self._sweep("the hub stopped during it")
        self._replay_notes()
        return cut_off

    def sweep(self) -> None:
        """Each scheduler tick: start what waits (after a stop, a pause, a run that broke
        off) and tell lateness."""
        if self.runs and (orphaned := self._sweep("its run ended without a report")):
            log.error("%d running tasks had no run; running them again", orphaned)

    def _sweep(self, orphan_note: str) -> int:
        """One pass over the open tasks (one query): a running task no run of this process
        holds goes back to todo with `orphan_note`; a todo task no run holds starts unless
        its Anima is paused; one past due is told once. How many were orphaned."""
        now = self._now()
        orphaned = 0
        for task in self._board.listing(states=tuple(OPEN_TASK_STATES), limit=10_000):
            if not self._ownership.holds(task.assignee):
                continue  # another worker's, running or not
            free = task.id not in self._queued
            if task.state is TaskState.RUNNING and free:
                try:
                    task = self._board.move(task.id, TaskState.TODO, "hub", orphan_note)
                except TaskError:
                    continue
                orphaned += 1
            if task.state is TaskState.TODO and free and not self._paused.is_paused(task.assignee):
                self.start(task)
            if task.due_at is not None and task.due_at <= now and task.escalated_at is None:
                self._escalate_late(task)
        return orphaned

    # running ----------------------------------------------------------------------------

    async def run(self, job: TaskJob) -> None:
        try:
            await self._run(job)
        finally:
            self._queued.discard(job.task_id)

    async def _run(self, job: TaskJob) -> None:
        if self._paused.is_paused(job.anima):
            log.info("task %d waits: %s is paused", job.task_id, job.anima)
            return
        try:
            task = self._board.move(job.task_id, TaskState.RUNNING, job.anima)
        except TaskError as exc:
            log.info("task %d not run: %s", job.task_id, exc, extra={"anima": job.anima})
            return
        anima = self._animas.get(task.assignee)
        if anima is None:
            self._fail(task, f"the Anima {task.assignee!r} no longer exists", final=True)
            return
        targets = self._resolve(task)
        offline = not self._thinker.model(anima)
        where = f"a task {self.telling.manager_words(task)} handed you (task {task.id})"
        began = time.monotonic()
        try:
            thought = await asyncio.wait_for(
                self._thinker.think(
                    anima,
                    task_prompt(task, self.telling.requester(task)),
                    targets,
                    where,
                    task_id=task.id,
                    offline=offline,
                    about=task_query(task),
                    requester=task.requested_by,
                ),
                self._timeout(task),
            )
        except LLMError as exc:
            # The board and the log keep the provider's words and the fix; the people told
            # of a failed task read the kind's plain sentence (hub/model/failure.py).
            kind = exc.kind
            reason = f"{kind.value}: {exc} (fix: {kind.fix})"
            final = not exc.retryable
            self._fail(task, reason, final=final, plain=kind.for_person, after=exc.retry_after)
            return
        except TimeoutError:
            self._fail(task, f"the run took longer than {self._timeout(task):.0f} s", final=False)
            return
        except Exception as exc:
            # A bug or an unexpected SDK error: tried again like a model outage, then failed
            # visibly, as a turn is (hub/turns/runtime.py); never left running with nobody on it.
            log.exception("task %d crashed", task.id, extra={"anima": task.assignee})
            self._fail(task, f"internal error: {exc!r}", final=False)
            return
        report = thought.text if not offline else offline_report(task, thought.recalled)
        took = f"in {time.monotonic() - began:.1f} s ({thought.spent()})"
        self._done(task, report or "_(the model gave an empty report)_", targets, took)

    def _timeout(self, task: TaskView) -> float:
        limit = self._limits.run_timeout_s
        if task.due_at is not None:
            left = (task.due_at - self._now()).total_seconds()
            if left > 0:  # past due already: it was told; the run gets its full time
                limit = min(limit, max(left, 1.0))
        return limit

    def _resolve(self, task: TaskView) -> list[Resolved]:
        """Where the report goes: the conversation that asked, then the task's and the
        assignee's own `report_to`, each place once (`dm:slack:U1` may be the DM that asked)."""
        written = [task.origin, *task.report_to, *self._configured(task.assignee)]
        unique = list(dict.fromkeys(w for w in written if w))
        # Checked again as it runs: what was made before the check, an account since moved.
        chain = self._board.chain(task.id) if task.report_to else []
        refused = self._addressing.refused_for_task(chain, self._configured)
        places: dict[str, Resolved] = {}
        for target in self.telling.targets.resolve(task.assignee, unique):
            if target.written in refused:
                target = Resolved(target.written, error=refused[target.written])
            places.setdefault(str(target.address or target.written), target)
        return list(places.values())

    def _configured(self, name: str) -> list[str]:
        """An Anima's own `report_to` in anima.toml: an admin wrote it."""
        anima = self._animas.get(name)
        return list(anima.spec.report_to) if anima else []

    def _done(self, task: TaskView, report: str, targets: list[Resolved], took: str) -> None:
        """`took`: how long the run took and what it spent, in words for the log."""
        posted = posted_report(task, report)

        def deliver(conn: Connection, done: TaskView) -> None:
            self.telling.post(conn, done, posted, targets, DeliveryKind.REPORT, "")
            self.telling.tell_manager(conn, done, posted)

        try:
            done = self._board.move(
                task.id, TaskState.DONE, task.assignee, "reported", result=report, then=deliver
            )
        except TaskError as exc:
            log.warning("task %d: report dropped: %s", task.id, exc, extra={"anima": task.assignee})
            return
        log.info("task %d done %s: %s", task.id, took, task.title, extra={"anima": task.assignee})
        self.telling.notes(done, targets, "", posted)

    def _fail(
        self,
        task: TaskView,
        reason: str,
        *,
        final: bool,
        plain: str | None = None,
        after: float | None = None,
    ) -> None:
        """`reason`: for the board and the log; `plain`: what people are told instead, if
        given; `after`: the provider's Retry-After, the least wait before the next run."""
        if not final and task.attempts < self._limits.max_attempts:
            delay = max(self._limits.retry_delay_s * task.attempts, after or 0.0)
            note = f"attempt {task.attempts} failed: {reason}; trying again in {delay:.0f} s"
            try:
                self._board.move(task.id, TaskState.TODO, "hub", note)
            except TaskError:
                return  # cancelled meanwhile
            log.warning("task %d: %s", task.id, note, extra={"anima": task.assignee})
            self._queued.add(task.id)
            self._retries[task.id] = asyncio.get_running_loop().call_later(delay, self._retry, task)
            return
        text = failed_text(task, plain or reason, self.telling.requester(task))
        targets = self.telling.resolve_origin(task)

        def escalate(conn: Connection, failed: TaskView) -> None:
            self.telling.post(conn, failed, text, targets, DeliveryKind.NOTICE, ":failed")
            self.telling.tell_manager(conn, failed, text)

        try:
            failed = self._board.move(
                task.id, TaskState.FAILED, "hub", reason, result=reason, then=escalate
            )
        except TaskError:
            return
        log.error("task %d failed: %s", task.id, reason, extra={"anima": task.assignee})
        self.telling.notes(failed, targets, ":failed", text)

    def _retry(self, task: TaskView) -> None:
        self._retries.pop(task.id, None)
        self._queued.discard(task.id)
        self.start(task)

    def close(self) -> None:
        """At stop: retries not yet due wait for the next start (the task stays todo)."""
        for timer in self._retries.values():
            timer.cancel()
        self._retries.clear()

    def _escalate_late(self, task: TaskView) -> None:
        if not self._board.mark_escalated(task.id):
            return
        text = late_text(task, self.telling.requester(task))
        targets = self.telling.resolve_origin(task)
        with self._db.write() as conn:
            self.telling.post(conn, task, text, targets, DeliveryKind.NOTICE, ":late")
            self.telling.tell_manager(conn, task, text)
        log.warning("task %d is past due", task.id, extra={"anima": task.assignee})
        self.telling.notes(task, targets, ":late", text, self._now())

    def _replay_notes(self) -> None:
        since = self._now() - _REPLAY
        for task in self._board.listing(states=(TaskState.DONE, TaskState.FAILED), limit=500):
            if task.updated_at < since:
                break
            try:
                if task.state is TaskState.DONE:
                    self.telling.notes(
                        task, self._resolve(task), "", posted_report(task, task.result)
                    )
                else:
                    text = failed_text(task, task.result, self.telling.requester(task))
                    self.telling.notes(task, self.telling.resolve_origin(task), ":failed", text)
            except OSError as exc:
                log.error("task %d: its memory note failed: %s", task.id, exc)
