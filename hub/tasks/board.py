"""The task board: work a manager Anima hands a subordinate, and every step it takes.

A task is a row of `task` with its state (`TaskState`: todo, running, blocked, review, done,
failed, cancelled); each transition is a row of `task_event` written in the same transaction,
with when, who (an Anima, a person, `hub`) and why. Only the transitions in `ALLOWED` are
possible: a cancelled task cannot start, a done one cannot fail. This module is the board
only: hub/tasks/delegation.py puts tasks on it, hub/tasks/runner.py runs and reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from hub.live import LiveFeed
from hub.store.db import Database, as_utc
from hub.store.models import OPEN_TASK_STATES, Task, TaskEvent, TaskState

ALLOWED: dict[TaskState, frozenset[TaskState]] = {
    TaskState.TODO: frozenset({TaskState.RUNNING, TaskState.CANCELLED}),
    TaskState.RUNNING: frozenset(
        {
            TaskState.TODO,  # put back for a retry
            TaskState.BLOCKED,
            TaskState.REVIEW,
            TaskState.DONE,
            TaskState.FAILED,
            TaskState.CANCELLED,
        }
    ),
    TaskState.BLOCKED: frozenset({TaskState.RUNNING, TaskState.FAILED, TaskState.CANCELLED}),
    TaskState.REVIEW: frozenset({TaskState.DONE, TaskState.RUNNING, TaskState.CANCELLED}),
    TaskState.FAILED: frozenset({TaskState.TODO}),  # an admin tries it again
    TaskState.DONE: frozenset(),
    TaskState.CANCELLED: frozenset(),
}


class TaskError(ValueError):
    """A task that does not exist, or a transition its state does not allow."""


class UnknownTask(TaskError):
    """No task has that id."""


@dataclass(frozen=True, slots=True)
class Step:
    at: datetime
    actor: str
    from_state: str | None
    to_state: str
    note: str


@dataclass(frozen=True, slots=True)
class TaskView:
    id: int
    title: str
    details: str
    manager: str
    assignee: str
    requested_by: str | None
    origin: str
    report_to: tuple[str, ...]
    due_at: datetime | None
    state: TaskState
    attempts: int
    depth: int
    parent_id: int | None
    result: str
    created_at: datetime
    updated_at: datetime
    escalated_at: datetime | None = None
    steps: tuple[Step, ...] = ()

    @property
    def open(self) -> bool:
        return self.state in OPEN_TASK_STATES


@dataclass(frozen=True, slots=True)
class NewTask:
    title: str
    manager: str
    assignee: str
    details: str = ""
    requested_by: str | None = None
    origin: str = ""
    report_to: tuple[str, ...] = ()
    due_at: datetime | None = None
    parent_id: int | None = None
    request_key: str | None = None  # the same request twice makes one task


class Duplicate(TaskError):
    """The request was made before: `task` is what it made."""

    def __init__(self, task: TaskView) -> None:
        super().__init__(f"already on the board as task {task.id} ({task.state.value})")
        self.task = task


# Runs in a transition's own transaction (e.g. the report's deliveries with its `done`).
InTransaction = Callable[[Connection, "TaskView"], None]


class TaskBoard:
    def __init__(
        self, db: Database, now: Callable[[], datetime], live: LiveFeed | None = None
    ) -> None:
        self._db = db
        self._now = now
        self._live = live or LiveFeed()

    def create(self, new: NewTask, actor: str) -> TaskView:
        """Put a task on the board (todo), one level deeper than its parent."""
        if not new.title.strip():
            raise TaskError("a task needs a title")
        now = self._now()
        with self._db.session() as session:
            depth = 0
            if new.parent_id is not None:
                parent = session.get(Task, new.parent_id)
                if parent is None:
                    raise UnknownTask(f"no task {new.parent_id}")
                depth = parent.depth + 1
            row = Task(
                title=new.title.strip()[:200],
                details=new.details,
                manager=new.manager,
                assignee=new.assignee,
                requested_by=new.requested_by,
                origin=new.origin,
                report_to=list(new.report_to),
                due_at=new.due_at,
                depth=depth,
                parent_id=new.parent_id,
                request_key=new.request_key,
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            try:
                session.flush()
            except IntegrityError:
                session.rollback()
                raise Duplicate(self._requested(new.request_key)) from None
            assert row.id is not None
            session.add(TaskEvent(task_id=row.id, at=now, actor=actor, to_state=row.state))
            session.flush()
            view = _view(row, _steps(session, row.id))
        self._told(view)
        return view

    def _requested(self, key: str | None) -> TaskView:
        with self._db.session() as session:
            row = session.exec(select(Task).where(Task.request_key == key)).one()
            return _view(row)

    def move(
        self,
        task_id: int,
        to: TaskState,
        actor: str,
        note: str = "",
        *,
        result: str | None = None,
        then: InTransaction | None = None,
    ) -> TaskView:
        """One transition, recorded; TaskError when the task's state does not allow it. Two
        moves at once: the state is compared as it is set, so the second one is refused.
        `then` runs in the same transaction: what it writes stands or falls with the move."""
        now = self._now()
        with self._db.session() as session:
            row = session.get(Task, task_id)
            if row is None:
                raise UnknownTask(f"no task {task_id}")
            was = row.state
            if to not in ALLOWED[was]:
                raise TaskError(f"task {task_id} is {was.value}: it cannot become {to.value}")
            values: dict[str, object] = {"state": to, "updated_at": now}
            if to is TaskState.RUNNING:
                values["attempts"] = row.attempts + 1
            if result is not None:
                values["result"] = result
            moved = session.exec(
                update(Task).where(col(Task.id) == task_id, col(Task.state) == was).values(values)
            )
            if moved.rowcount != 1:
                raise TaskError(f"task {task_id} changed meanwhile; look again")
            session.add(
                TaskEvent(
                    task_id=task_id, at=now, actor=actor, from_state=was, to_state=to, note=note
                )
            )
            session.flush()
            session.refresh(row)
            view = _view(row, _steps(session, task_id))
            if then is not None:
                then(session.connection(), view)
        self._told(view)
        return view

    def _told(self, view: TaskView) -> None:
        """On the live feed once committed; the board is for admins (hub/api/auth.py)."""
        self._live.publish("task", (), id=view.id, state=view.state.value, assignee=view.assignee)

    def mark_escalated(self, task_id: int) -> bool:
        """Note that the task's lateness was told; False when it was told before."""
        with self._db.session() as session:
            marked = session.exec(
                update(Task)
                .where(col(Task.id) == task_id, col(Task.escalated_at).is_(None))
                .values(escalated_at=self._now())
            )
            return bool(marked.rowcount == 1)

    def chain(self, task_id: int) -> list[TaskView]:
        """The task and every task above it, nearest first."""
        found: list[TaskView] = []
        with self._db.session() as session:
            next_id: int | None = task_id
            while next_id is not None and len(found) < 50:
                row = session.get(Task, next_id)
                if row is None:
                    break
                found.append(_view(row))
                next_id = row.parent_id
        return found

    def count_since(self, manager: str, assignee: str, since: datetime) -> int:
        """How many tasks `manager` handed `assignee` since then."""
        query = select(func.count()).where(
            Task.manager == manager, Task.assignee == assignee, col(Task.created_at) >= since
        )
        with self._db.session() as session:
            return int(session.exec(query).one())

    def counts(self) -> dict[str, int]:
        """How many tasks are in each state (health, `animahub status`)."""
        query = select(Task.state, func.count()).group_by(Task.state)
        with self._db.session() as session:
            return {str(TaskState(state).value): int(n) for state, n in session.exec(query).all()}

    def get(self, task_id: int) -> TaskView:
        with self._db.session() as session:
            row = session.get(Task, task_id)
            if row is None:
                raise UnknownTask(f"no task {task_id}")
            return _view(row, _steps(session, task_id))

    def listing(
        self,
        *,
        states: Sequence[TaskState] = (),
        assignee: str | None = None,
        requested_by: str | None = None,
        manager: str | None = None,
        limit: int = 100,
    ) -> list[TaskView]:
        """Tasks newest first, of the given states (all when none), assignee, requester."""
        query = select(Task).order_by(col(Task.id).desc()).limit(limit)
        if manager is not None:
            query = query.where(Task.manager == manager)
        if states:
            query = query.where(col(Task.state).in_([s.value for s in states]))
        if assignee is not None:
            query = query.where(Task.assignee == assignee)
        if requested_by is not None:
            query = query.where(Task.requested_by == requested_by)
        with self._db.session() as session:
            return [_view(row) for row in session.exec(query).all()]


def _steps(session: Session, task_id: int) -> tuple[Step, ...]:
    events = session.exec(
        select(TaskEvent).where(TaskEvent.task_id == task_id).order_by(col(TaskEvent.id))
    ).all()
    return tuple(Step(as_utc(e.at), e.actor, e.from_state, e.to_state, e.note) for e in events)


def _view(row: Task, steps: tuple[Step, ...] = ()) -> TaskView:
    assert row.id is not None
    return TaskView(
        row.id,
        row.title,
        row.details,
        row.manager,
        row.assignee,
        row.requested_by,
        row.origin,
        tuple(row.report_to),
        as_utc(row.due_at) if row.due_at else None,
        row.state,
        row.attempts,
        row.depth,
        row.parent_id,
        row.result,
        as_utc(row.created_at),
        as_utc(row.updated_at),
        as_utc(row.escalated_at) if row.escalated_at else None,
        steps,
    )
