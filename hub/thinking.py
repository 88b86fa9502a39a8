"""A turn with no one asking: a heartbeat, a cron, a delegated task.

The Anima thinks with its identity and tools, primed from memory in the privacy scope of
where its words will be posted (a DM: that person's; one channel: that channel's; several
places: only what is shared), so nothing private reaches a place it does not belong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from hub.animas import Anima, effective_model, effective_timezone
from hub.episodes import describe
from hub.identity import PersonView
from hub.llm import TurnContext, spent
from hub.memory.recall import RecallScope
from hub.model_client import Usage
from hub.runtime import Responders
from hub.settings import Settings
from hub.targets import Resolved, groups, scope_of
from hub.tools import ToolContext

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
        """What it took, for a log line (hub/llm.py `spent`)."""
        return spent(self.model, self.usage, len(self.recalled))


class Thinker:
    def __init__(
        self, settings: Settings, responders: Responders, memory: MemoryService | None
    ) -> None:
        self._settings = settings
        self._responders = responders
        self._memory = memory

    def model(self, anima: Anima) -> str:
        """The Anima's model for its own turns (tasks, schedule); empty: offline."""
        return effective_model(anima, self._settings.llm)

    async def recall(self, scope: RecallScope, text: str) -> tuple[str, tuple[str, ...]]:
        """The rendered priming for `text` and its lines; empty with memory off."""
        if self._memory is None:
            return "", ()
        priming = await self._memory.prime(scope, text)
        if priming.empty:
            return "", ()
        return priming.render(), tuple(priming.memories())

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
        dm = targets[0] if len(groups(targets)) == 1 and targets[0].is_dm else None
        person = dm.person if dm is not None else None
        if person is not None and dm is not None and dm.address is not None:
            where += f"; what you write goes to {describe(dm.address)}"
        rendered, lines = await self.recall(scope, about or text)
        if offline:
            return Thought("", lines)
        tz = effective_timezone(anima, self._settings.hub)
        ctx = TurnContext(
            anima=anima.name,
            anima_title=anima.spec.role,
            anima_summary="",
            identity=anima.identity,
            model=self.model(anima),
            person=person or PersonView("hub", "the hub's scheduler", (), tz, "", None),
            where=where,
            history=[],
            text=text,
            tools=ToolContext(
                anima=anima.name,
                person_id=scope.person_id,
                person_is_admin=False,
                conversation=f"schedule:{anima.name}" if task_id is None else f"task:{task_id}",
                timezone=tz,
                channel_key=scope.channel_key or "",
                is_dm=scope.is_dm,
                turn="" if task_id is None else f"task:{task_id}",
                task_id=task_id,
                addressable=tuple(t.written for t in targets),
            ),
        )
        if rendered:
            ctx = replace(ctx, recalled=rendered)
        pieces: list[str] = []
        used = Usage()
        async for piece in self._responders.model.stream(ctx):
            if isinstance(piece, Usage):
                used += piece
            else:
                pieces.append(piece)
        return Thought("".join(pieces).strip(), lines, ctx.model, used)
