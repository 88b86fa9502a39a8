"""`/anima tasks` and `/anima delegate`: the board (hub/tasks/board.py) from a chat.

`/anima tasks` lists open tasks: an admin sees every one, anyone else the tasks they asked
for, since a task holds what a person asked a manager. `/anima delegate NAME TASK…` (admins)
gives an Anima a task for its supervisor; the report is posted where the command was typed.
"""

from __future__ import annotations

from hub.memory.text import clip
from hub.messages import Inbound
from hub.people.identity import PersonView
from hub.store.models import OPEN_TASK_STATES
from hub.tasks.board import TaskBoard, TaskError, TaskView
from hub.tasks.delegation import Delegation, Request

_SHOWN = 20
_RECENT = 3  # finished tasks shown when none is open
DELEGATE_USAGE = "Usage: /anima delegate NAME TASK (e.g. /anima delegate kai check the build)"


class TaskCommands:
    def __init__(self, board: TaskBoard, delegation: Delegation | None = None) -> None:
        self._board = board
        self._delegation = delegation

    def listing(self, person: PersonView) -> str:
        mine = None if person.is_admin else person.id
        open_tasks = self._board.listing(
            states=tuple(OPEN_TASK_STATES), requested_by=mine, limit=_SHOWN + 1
        )
        if not open_tasks:
            none = "No open tasks." if person.is_admin else "No open tasks that you asked for."
            recent = self._board.listing(requested_by=mine, limit=_RECENT)
            if not recent:
                return none
            return f"{none} The latest:\n" + "\n".join(map(_line, recent))
        lines = [_line(t) for t in open_tasks[:_SHOWN]]
        if len(open_tasks) > _SHOWN:
            lines.append("… and more: animahub task list")
        return "Open tasks:\n" + "\n".join(lines)

    def delegate(self, args: tuple[str, ...], inbound: Inbound, person: PersonView) -> str:
        if self._delegation is None:
            return "Delegation is not available on this hub."
        if len(args) < 2:
            return DELEGATE_USAGE
        name = args[0].lstrip("@").lower()
        text = " ".join(args[1:])
        title = clip(text, 200)
        try:
            made = self._delegation.delegate(
                Request(
                    manager=self._delegation.manager_of(name),
                    to=name,
                    title=title,
                    details=text if title != text else "",
                    requested_by=person.id,
                    origin=str(inbound.address),
                    turn=f"command:{inbound.address.platform}:{inbound.event_id}",
                    by_admin=True,
                ),
                actor=person.id,
            )
        except TaskError as exc:
            return f"Not delegated: {exc}"
        task = made.task
        if not made.new:
            return f"Already delegated: task {task.id} ({task.state.value})."
        return (
            f"Task {task.id} for {task.assignee}: {task.title}. "
            f"{self._delegation.starting(task.assignee)}; "
            "the report will be posted here."
        )


def _line(task: TaskView) -> str:
    return f"task {task.id} [{task.state.value}] {task.title} ({task.manager} → {task.assignee})"
