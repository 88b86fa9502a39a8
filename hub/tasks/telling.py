"""What a task's run tells, and where: its report or a notice posted to each target once, the
report in the manager's conversation, the assignee's and the manager's memory notes, the link
to a report published where its platform gives one (a Notion page)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from datetime import datetime

from sqlalchemy import Connection, insert
from sqlalchemy.exc import IntegrityError

from hub.adapter import Adapter, Linker
from hub.delivery.deliveries import Delivery
from hub.delivery.targets import Post, Resolved, TargetResolver, post_to
from hub.memory.working import estimate_tokens
from hub.messages import Address, DeliveryKind
from hub.store.models import Turn
from hub.tasks.board import TaskView
from hub.tasks.parts import Names, TaskParts
from hub.turns.thinking import scope_for

log = logging.getLogger(__name__)
_INSERT_TURN = insert(Turn)
_REPORT_KEY = re.compile(r"^task:(\d+)>")  # a report's delivery, not a notice about it


class TaskTelling:
    def __init__(self, parts: TaskParts, names: Names, now: Callable[[], datetime]) -> None:
        self._parts = parts
        self._names = names
        self._now = now
        self.targets = TargetResolver(parts.db)

    def published(self, key: str, address: str, link: str) -> None:
        """A report went out where it has a link (a Notion page): the link is posted once to
        the conversation that asked, so the person finds it."""
        found = _REPORT_KEY.match(key)
        if found is None:
            return
        task = self._parts.board.get(int(found.group(1)))
        if not task.origin or address == task.origin:
            return
        where = address.split(":", 1)[0].capitalize()
        text = f"{task.assignee}'s report on task {task.id} is in {where}: {link}"
        targets = self.resolve_origin(task)
        try:
            with self._parts.db.write() as conn:
                self.post(conn, task, text, targets, DeliveryKind.NOTICE, f":link:{address}")
        except IntegrityError:
            log.info("task %d: the link to %s was posted before", task.id, address)

    def resolve_origin(self, task: TaskView) -> list[Resolved]:
        return self.targets.resolve(task.assignee, [task.origin]) if task.origin else []

    def post(
        self,
        conn: Connection,
        task: TaskView,
        text: str,
        targets: list[Resolved],
        kind: DeliveryKind,
        what: str,
    ) -> None:
        """Each target once (its key is the task's), or its failure recorded, visibly."""
        poster = task.assignee if kind is DeliveryKind.REPORT else self._speaker(task)
        post = Post(text, kind, poster, f"task:{task.id}{what}", f"task {task.id}")
        for target in targets:
            post_to(conn, self._parts.outbox, post, target)

    def tell_manager(self, conn: Connection, task: TaskView, text: str) -> None:
        """The report in the conversation the manager was asked in: its next turn there has
        it in its history, like a message from the assignee."""
        if not task.origin or self._parts.animas.get(task.manager) is None:
            return
        address = Address.parse(task.origin)
        conn.execute(
            _INSERT_TURN,
            [
                {
                    "conversation": task.origin,
                    "channel_key": address.channel_key,
                    "anima": task.manager,
                    "role": "user",
                    "person_id": None,
                    "author": f"{task.assignee} (task {task.id})",
                    "text": text,
                    "tokens": estimate_tokens(text),
                    "inbox_id": None,
                    "created_at": self._now(),
                }
            ],
        )

    def notes(
        self,
        task: TaskView,
        targets: list[Resolved],
        what: str,
        said: str,
        at: datetime | None = None,
    ) -> None:
        """The assignee's and the manager's memory of it, in the scope it was posted in;
        dated by the task's last step, so writing them again finds them written."""
        memory = self._parts.memory
        if memory is None:
            return
        scope = scope_for(task.assignee, targets)
        at = at or task.updated_at
        for anima in (task.assignee, task.manager):
            if self._parts.animas.get(anima) is None:
                continue
            key = f"task:{task.id}{what}" if anima == task.assignee else f"task:{task.id}{what}>m"
            memory.record_note(anima, key, said, scope.scope_of_new_item(), scope.channel_key, at)

    # words ------------------------------------------------------------------------------

    def requester(self, task: TaskView) -> str:
        return self._names.display_name(task.requested_by) if task.requested_by else ""

    def manager_words(self, task: TaskView) -> str:
        return task.manager if self._parts.animas.get(task.manager) else "an admin"

    def _speaker(self, task: TaskView) -> str:
        """Who tells a failure or lateness: the manager, when it is an Anima."""
        return task.manager if self._parts.animas.get(task.manager) else task.assignee


def report_links(
    adapters: Mapping[str, Adapter], telling: TaskTelling
) -> Callable[[Delivery], None]:
    """An outbox listener: when a delivery is out where its platform gives it a link (a
    Notion page), a task's report says so where the task was asked for."""

    def sent(row: Delivery) -> None:
        adapter = adapters.get(row.address.split(":", 1)[0])
        if isinstance(adapter, Linker) and row.message_ids:
            address = Address.parse(row.address, row.address_kind)
            link = adapter.link(address, row.message_ids[0])
            if link:
                telling.published(row.idempotency_key, row.address, link)

    return sent
