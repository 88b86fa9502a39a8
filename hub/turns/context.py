"""The context a turn is thought in, built in one place for every kind of turn: a person's
message (hub/turns/runtime.py) and a turn no one asked for, a heartbeat, a cron, a task
(hub/turns/thinking.py). What the Anima is (its identity, its role's title and summary, its model)
and what memory primes it with are the same whoever asked; the callers differ only in who
the turn is with, where its words go, the conversation before it and the privacy scope it
recalls in.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from hub.animas import Anima, effective_model, effective_timezone
from hub.memory.recall import PROFILE, RecallScope
from hub.memory.service import MemoryService
from hub.model.tool_registry import ToolContext
from hub.people.identity import PersonView
from hub.roles import Role
from hub.settings import Settings
from hub.turns.llm import TurnContext

log = logging.getLogger(__name__)


class TurnContexts:
    def __init__(
        self, settings: Settings, roles: Mapping[str, Role], memory: MemoryService | None
    ) -> None:
        self._settings = settings
        self._roles = roles
        self._memory = memory

    def model(self, anima: Anima) -> str:
        return effective_model(anima, self._settings.llm)

    def timezone(self, anima: Anima) -> str:
        return effective_timezone(anima, self._settings.hub)

    def build(
        self,
        anima: Anima,
        person: PersonView,
        where: str,
        text: str,
        tools: ToolContext,
        history: list[dict[str, str]] | None = None,
        earlier_from_person: list[str] | None = None,
    ) -> TurnContext:
        """The turn's context before recall (`recalled`): `history`, the conversation's
        earlier turns, oldest first; `earlier_from_person`, what this person said in them."""
        role = self._roles.get(anima.spec.role)
        return TurnContext(
            anima=anima.name,
            anima_title=role.title if role else anima.spec.role,
            anima_summary=role.summary if role else "",
            identity=anima.identity,
            model=self.model(anima),
            person=person,
            where=where,
            history=history or [],
            text=text,
            tools=tools,
            earlier_from_person=earlier_from_person or [],
        )

    async def recalled(
        self, ctx: TurnContext, scope: RecallScope, about: str | None = None
    ) -> TurnContext:
        """`ctx` primed from memory in `scope` for `about` (the turn's text if not given).
        A failing index costs the turn its recall, not its answer: the error is logged and
        `animahub repair-rag` rebuilds the index."""
        if self._memory is None:
            return ctx
        try:
            priming = await self._memory.prime(scope, ctx.text if about is None else about)
        except (OSError, RuntimeError, ValueError) as exc:
            log.error("recall failed: %s", exc, extra={"anima": ctx.anima})
            return ctx
        if priming.empty:
            return ctx
        return replace(
            ctx,
            recalled=priming.render(),
            recalled_lines=priming.memories(),
            about_person=tuple(priming.sections.get(PROFILE, ())),
        )
