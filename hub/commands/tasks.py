"""`/anima tasks`: the open tasks of the board (hub/tasks.py). An admin sees every one; anyone
else the tasks they asked for, since a task holds what a person asked a manager."""

from __future__ import annotations

from hub.identity import PersonView
from hub.tasks import OPEN, TaskBoard

_SHOWN = 20


class TaskCommands:
    def __init__(self, board: TaskBoard) -> None:
        self._board = board

    def listing(self, person: PersonView) -> str:
        mine = None if person.is_admin else person.id
        open_tasks = self._board.listing(states=tuple(OPEN), requested_by=mine, limit=_SHOWN + 1)
        if not open_tasks:
            return "No open tasks." if person.is_admin else "No open tasks that you asked for."
        lines = [
            f"task {t.id} [{t.state.value}] {t.title} ({t.manager} → {t.assignee})"
            for t in open_tasks[:_SHOWN]
        ]
        if len(open_tasks) > _SHOWN:
            lines.append("… and more: animahub task list")
        return "Open tasks:\n" + "\n".join(lines)
