"""The task board (hub/tasks/board.py) on SQLite and PostgreSQL: every transition recorded with
when, who and why; only the allowed ones; two at once, one wins; listings by state, assignee
and requester."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from hub.clock import ManualClock
from hub.store.db import Database
from hub.store.models import TaskState
from hub.tasks.board import NewTask, TaskBoard, TaskError

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def board(db: Database, clock: ManualClock) -> TaskBoard:
    return TaskBoard(db, clock.now)


def check_build(
    board: TaskBoard, requested_by: str | None = None, report_to: tuple[str, ...] = ()
) -> int:
    new = NewTask(
        "Check the build", "mika", "kai", "CI is red since noon", requested_by, "", report_to
    )
    return board.create(new, "mika").id


def test_every_transition_is_recorded_with_when_who_and_why(
    board: TaskBoard, clock: ManualClock
) -> None:
    task_id = check_build(board, requested_by="dana", report_to=("slack:T1/C0GENERAL",))
    clock.advance(timedelta(minutes=1))
    board.move(task_id, TaskState.RUNNING, "kai")
    clock.advance(timedelta(minutes=5))
    done = board.move(task_id, TaskState.DONE, "kai", "fixed the flaky test", result="Green.")
    assert (done.state, done.attempts, done.result) == (TaskState.DONE, 1, "Green.")
    assert done.report_to == ("slack:T1/C0GENERAL",) and done.requested_by == "dana"
    assert [(s.actor, s.from_state, s.to_state, s.note) for s in done.steps] == [
        ("mika", None, "todo", ""),
        ("kai", "todo", "running", ""),
        ("kai", "running", "done", "fixed the flaky test"),
    ]
    assert [s.at for s in done.steps] == [START, START + timedelta(minutes=1), clock.now()]
    assert board.get(task_id) == done


def test_only_allowed_transitions_happen(board: TaskBoard) -> None:
    task_id = check_build(board)
    with pytest.raises(TaskError, match="todo: it cannot become done"):
        board.move(task_id, TaskState.DONE, "kai")
    board.move(task_id, TaskState.CANCELLED, "admin:olivia", "not needed")
    for state in (TaskState.RUNNING, TaskState.FAILED, TaskState.TODO):
        with pytest.raises(TaskError, match="cancelled"):
            board.move(task_id, state, "kai")
    with pytest.raises(TaskError, match="no task 999"):
        board.move(999, TaskState.RUNNING, "kai")
    assert len(board.get(task_id).steps) == 2  # nothing refused left a trace


def test_a_task_delegated_within_a_task_is_one_level_deeper(board: TaskBoard) -> None:
    parent = check_build(board)
    child = board.create(NewTask("Bisect", "kai", "aria", parent_id=parent), "kai")
    assert (child.depth, child.parent_id) == (1, parent)


def test_two_moves_at_once_one_wins(board: TaskBoard) -> None:
    task_id = check_build(board)
    start = threading.Barrier(6)

    def take() -> bool:
        start.wait()
        try:
            board.move(task_id, TaskState.RUNNING, "kai")
        except TaskError:
            return False
        return True

    with ThreadPoolExecutor(6) as pool:
        won = list(pool.map(lambda _: take(), range(6)))
    assert won.count(True) == 1
    task = board.get(task_id)
    assert task.attempts == 1 and [s.to_state for s in task.steps] == ["todo", "running"]


def test_listings_by_state_assignee_and_requester(board: TaskBoard) -> None:
    first = check_build(board, requested_by="dana")
    second = board.create(NewTask("Write notes", "mika", "aria"), "mika").id
    board.move(first, TaskState.RUNNING, "kai")
    assert [t.id for t in board.listing()] == [second, first]  # newest first
    assert [t.id for t in board.listing(states=(TaskState.RUNNING,))] == [first]
    assert [t.id for t in board.listing(assignee="aria")] == [second]
    assert [t.id for t in board.listing(requested_by="dana")] == [first]
