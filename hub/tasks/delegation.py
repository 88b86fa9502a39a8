"""Delegation: a manager Anima hands a direct subordinate a task, within limits.

The hierarchy is `supervisor` in each anima.toml. A request is refused, with a reason the
manager's model can act on and a log line, when the assignee is not a direct subordinate,
when the chain of delegations would grow past `[tasks] max_depth`, when the manager has
handed the same Anima `max_per_pair_per_hour` tasks within the hour, and when the work
would go back to an Anima that handed it down (ping-pong), and when its `report_to` names a
place the person asking may not post to (hub/tasks/addressing.py: the one check every target
passes). A request made twice (the same turn run again after a crash) is the task it made
the first time. An accepted task starts at once in the assignee's mailbox
(hub/tasks/runner.py).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from hub.animas import AnimaRegistry
from hub.settings import TasksSection
from hub.store.models import OPEN_TASK_STATES, TaskState
from hub.tasks.addressing import Addressing, Asker, NotAllowed
from hub.tasks.board import Duplicate, NewTask, TaskBoard, TaskError, TaskView

log = logging.getLogger(__name__)
ADMIN_MANAGER = "hub"  # the manager of a task an admin gave an Anima that has no supervisor
_HOUR = timedelta(hours=1)


class Refused(TaskError):
    """A delegation the rules do not allow; its text says why and what to do instead."""


@dataclass(frozen=True, slots=True)
class Request:
    manager: str
    to: str
    title: str
    details: str = ""
    due_at: datetime | None = None
    report_to: tuple[str, ...] = ()
    requested_by: str | None = None  # the person who asked the manager
    origin: str = ""  # the address the request came from: where the report goes first
    parent_id: int | None = None  # the task the manager is working on, if any
    turn: str = ""  # the turn that asked: the same turn asking again makes no second task
    by_admin: bool = False  # an admin's `/anima delegate`: any Anima, for its supervisor
    # Who names `report_to`: each target must be a place they may post (hub/tasks/addressing.py).
    # None names nobody, so it may name no target.
    asker: Asker | None = None


@dataclass(frozen=True, slots=True)
class Delegated:
    task: TaskView
    new: bool  # False: the same request was made before, and this is its task


# A task delegated while no hub runs (through a CLI command's own short-lived hub).
STARTS_WITH_THE_HUB = "starts when the hub does, `animahub start`"


class Delegation:
    def __init__(
        self,
        board: TaskBoard,
        animas: AnimaRegistry,
        limits: TasksSection,
        now: Callable[[], datetime],
        start: Callable[[TaskView], None],
        addressing: Addressing,
        runs: bool = True,
    ) -> None:
        self._board = board
        self._addressing = addressing
        self._animas = animas
        self._limits = limits
        self._now = now
        self._start = start
        self._runs = runs

    def starting(self, assignee: str) -> str:
        """When a new task starts, as a reply says it: now, or, in a CLI command's
        short-lived hub (which runs no tasks), when the hub is started."""
        return f"{assignee} starts now" if self._runs else f"{assignee} {STARTS_WITH_THE_HUB}"

    def subordinates(self, manager: str) -> list[str]:
        return sorted(a.name for a in self._animas.all() if a.spec.supervisor == manager)

    def animas(self) -> list[str]:
        return self._animas.names()

    def not_subordinate(self, manager: str, to: str) -> str:
        """The refusal of a task for an Anima that does not report to `manager`."""
        return f"{to} is not a direct subordinate of {manager}; {self._yours(manager)}"

    def manager_of(self, anima: str) -> str:
        """Who an admin's task for `anima` reports to: its supervisor, else the hub."""
        found = self._animas.get(anima)
        if found is None:
            raise Refused(f"no Anima named {anima!r} (Animas: {', '.join(self._animas.names())})")
        return found.spec.supervisor or ADMIN_MANAGER

    def home_channel(self, manager: str, to: str) -> str:
        """Where a task asked for from no conversation (the CLI, the API) is reported and
        escalated: the manager's first heartbeat channel, else the assignee's; never
        nowhere, so a failure cannot go unheard."""
        for name in (manager, to):
            anima = self._animas.get(name)
            if anima is not None and anima.spec.heartbeat.channels:
                return anima.spec.heartbeat.channels[0]
        return ""

    def delegate(self, request: Request, actor: str) -> Delegated:
        """Put the task on the board and start it; Refused with the reason otherwise."""
        try:
            self._check(request)
        except Refused as exc:
            log.warning(
                "delegation %s → %s refused: %s",
                request.manager,
                request.to,
                exc,
                extra={"anima": request.manager},
            )
            raise
        new = NewTask(
            title=request.title,
            manager=request.manager,
            assignee=request.to,
            details=request.details,
            requested_by=request.requested_by,
            origin=request.origin,
            report_to=request.report_to,
            due_at=request.due_at,
            parent_id=request.parent_id,
            request_key=_request_key(request),
        )
        try:
            task = self._board.create(new, actor)
        except Duplicate as exc:
            return Delegated(exc.task, new=False)
        log.info(
            "task %d: %s → %s: %s",
            task.id,
            task.manager,
            task.assignee,
            task.title,
            extra={"anima": task.manager},
        )
        self._start(task)
        return Delegated(task, new=True)

    def no_such(self, manager: str, to: str) -> str:
        """The refusal of a task for a name no Anima has: which Animas there are, and how
        the manager is asked for one."""
        mine = self.subordinates(manager)
        how = f"; ask as “have {mine[0]} …”" if mine else ""
        return (
            f"no Anima named {to!r} (the Animas here: {', '.join(self.animas())}); "
            f"{self._yours(manager)}{how}"
        )

    def _check(self, request: Request) -> None:
        if self._animas.get(request.to) is None:
            raise Refused(self.no_such(request.manager, request.to))
        if request.to == request.manager:
            raise Refused("an Anima cannot delegate to itself: do the work, or report back")
        if not request.by_admin:
            assignee = self._animas.get(request.to)
            if assignee is None or assignee.spec.supervisor != request.manager:
                raise Refused(self.not_subordinate(request.manager, request.to))
        if request.parent_id is not None:
            self._check_chain(request)
        self._check_pair(request)
        self._check_targets(request)

    def _check_targets(self, request: Request) -> None:
        """Last, so that a request refused for another reason audits no admin's targets."""
        if not request.report_to:
            return
        asker = request.asker or Asker(None, admin=False, anima=request.manager)
        try:
            self._addressing.check(asker, request.report_to)
        except NotAllowed as exc:
            raise Refused(str(exc)) from None

    def _check_chain(self, request: Request) -> None:
        assert request.parent_id is not None
        chain = self._board.chain(request.parent_id)
        if len(chain) >= self._limits.max_depth:
            path = " ← ".join(f"task {t.id} ({t.manager} → {t.assignee})" for t in chain)
            raise Refused(
                f"delegation depth limit ({self._limits.max_depth}) reached: {path}; do this "
                "part yourself and put it in your report"
            )
        handed_down = next((t for t in chain if t.manager == request.to), None)
        if handed_down is not None:
            raise Refused(
                f"ping-pong: {request.to} handed this work down (task {handed_down.id}); "
                "send it back in your report instead of delegating it back"
            )

    def _check_pair(self, request: Request) -> None:
        back = self._board.listing(
            states=tuple(OPEN_TASK_STATES), assignee=request.manager, manager=request.to, limit=1
        )
        if back:
            raise Refused(
                f"ping-pong: {request.to} has handed {request.manager} task {back[0].id}, "
                "still open; answer it with your report instead of handing work back"
            )
        since = self._now() - _HOUR
        sent = self._board.count_since(request.manager, request.to, since)
        if sent >= self._limits.max_per_pair_per_hour:
            raise Refused(
                f"{request.manager} has handed {request.to} {sent} tasks in the last hour "
                f"(limit {self._limits.max_per_pair_per_hour}); wait, or fold the work into "
                "an open task"
            )

    def _yours(self, manager: str) -> str:
        mine = self.subordinates(manager)
        return (
            f"{manager}'s direct subordinates: {', '.join(mine)}"
            if mine
            else f"{manager} has no subordinates"
        )

    def cancel(self, task_id: int, actor: str, reason: str, *, manager: str | None) -> TaskView:
        """Cancel an open task; with `manager`, only one that manager delegated."""
        task = self._board.get(task_id)
        if manager is not None and task.manager != manager:
            raise Refused(f"task {task_id} was delegated by {task.manager}, not {manager}")
        return self._board.move(task_id, TaskState.CANCELLED, actor, reason)


def _request_key(request: Request) -> str | None:
    if not request.turn:
        return None
    said = " ".join(request.title.lower().split())
    digest = hashlib.sha256(f"{request.to}\n{said}".encode()).hexdigest()[:16]
    return f"{request.turn}>{request.to}:{digest}"
