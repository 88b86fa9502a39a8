"""A turn with no one asking: a heartbeat, a cron, a delegated task.

The Anima thinks with its identity and tools, primed from memory in the privacy scope of
where its words will be posted (a DM: that person's; one channel: that channel's; several
places: only what is shared), so nothing private reaches a place it does not belong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hub.animas import Anima
from hub.delivery.targets import Resolved, groups, scope_of
from hub.memory.recall import RecallScope
from hub.model.client import Usage
from hub.model.tool_registry import ToolContext
from hub.people.identity import PersonView
from hub.roles import Role
from hub.settings import Settings
from hub.turns.context import TurnContexts
from hub.turns.episodes import describe
from hub.turns.llm import TurnContext, spent
from hub.turns.runtime import Responders

if TYPE_CHECKING:
    from hub.memory.service import MemoryService


def scope_for(anima: str, targets: Sequence[Resolved]) -> RecallScope:
    """One privacy scope for text posted to all of `targets`: theirs when they share one,
    else only what is shared."""
    by_scope = groups(targets)
    if len(by_scope) == 1:
        return scope_of(anima, by_scope[0])
    return RecallScope(anima, None, None, False)


def task_scope(
    posted: RecallScope, requester: str | None, aliases: tuple[str, ...] = ()
) -> RecallScope:
    """What a task recalls, posted in `posted`: what is shared and what the place's own
    conversations hold, and a person's DM memory only when the task is posted to that
    person alone and they asked for it (`aliases`: the ids merged into them, one of which
    may have asked). A task someone else gave (an admin, a manager) posted to a person's DM
    recalls only what is shared: nobody's private memory is another's to put to work."""
    person = posted.person_id
    if posted.is_dm and person is not None and requester not in (person, *aliases):
        return RecallScope(posted.anima, None, None, False)
    return posted


@dataclass(frozen=True, slots=True)
class Thought:
    text: str
    recalled: tuple[str, ...] = ()  # what priming found, for an offline digest
    model: str = ""  # "" when no model was asked
    usage: Usage = field(default_factory=Usage)

    def spent(self) -> str:
        """What it took, for a log line (hub/turns/llm.py `spent`)."""
        return spent(self.model, self.usage, len(self.recalled))


class Thinker:
    def __init__(
        self,
        settings: Settings,
        responders: Responders,
        memory: MemoryService | None,
        roles: Mapping[str, Role],
    ) -> None:
        self._responders = responders
        self._memory = memory
        self._contexts = TurnContexts(settings, roles, memory)

    def model(self, anima: Anima) -> str:
        return self._contexts.model(anima)

    def timezone(self, anima: Anima) -> str:
        return self._contexts.timezone(anima)

    async def think(
        self,
        anima: Anima,
        text: str,
        targets: Sequence[Resolved],
        where: str,
        *,
        task_id: int | None = None,
        offline: bool = False,
        about: str | None = None,
        requester: str | None = None,
    ) -> Thought:
        """The Anima's answer to `text`; LLMError when the model fails. `offline`: no model
        call, only what memory recalls (the caller writes the offline text). `about`: what
        to recall memory for, when not all of `text` (a task's own words, not the
        instructions around them). A task (`task_id`) recalls a person's private memory
        only when that person asked for it (`requester`) and it is posted to them alone
        (`task_scope`)."""
        scope = (
            scope_for(anima.name, targets)
            if targets
            else RecallScope(anima.name, None, None, False)
        )
        if task_id is not None:
            asked_of, memory = scope.person_id, self._memory
            merged = memory.aliases_of(asked_of) if memory is not None and asked_of else ()
            scope = task_scope(scope, requester, merged)
        ctx = self._context(anima, text, targets, where, scope, task_id)
        ctx = await self._contexts.recalled(ctx, scope, about or text)
        lines = tuple(ctx.recalled_lines)
        if offline:
            return Thought("", lines)
        pieces: list[str] = []
        used = Usage()
        async for piece in self._responders.model.stream(ctx):
            if isinstance(piece, Usage):
                used += piece
            else:
                pieces.append(piece)
        return Thought("".join(pieces).strip(), lines, ctx.model, used)

    def _context(
        self,
        anima: Anima,
        text: str,
        targets: Sequence[Resolved],
        where: str,
        scope: RecallScope,
        task_id: int | None,
    ) -> TurnContext:
        """The context before recall: with the person whose DM it goes to, else with the
        hub's scheduler."""
        dm = targets[0] if len(groups(targets)) == 1 and targets[0].is_dm else None
        person = dm.person if dm is not None else None
        if person is not None and dm is not None and dm.address is not None:
            where += f"; what you write goes to {describe(dm.address)}"
        timezone = self.timezone(anima)
        return self._contexts.build(
            anima,
            person or PersonView("hub", "the hub's scheduler", (), timezone, "", None),
            where,
            text,
            ToolContext(
                anima=anima.name,
                person_id=scope.person_id,
                person_is_admin=False,
                conversation=f"schedule:{anima.name}" if task_id is None else f"task:{task_id}",
                timezone=timezone,
                channel_key=scope.channel_key or "",
                is_dm=scope.is_dm,
                turn="" if task_id is None else f"task:{task_id}",
                task_id=task_id,
                addressable=tuple(t.written for t in targets),
            ),
        )
