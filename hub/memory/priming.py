"""What a turn is primed with: the sections recalled before it, each in its own token budget.

One query embedding serves every section: recent activity (episodes of the last hours, in
time order), what was marked important, related memories (what neither shows already), the
notes the knowledge graph links to those, and what Animas learned about the person.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from hub.memory.documents import Layer
from hub.memory.graph import KnowledgeGraph
from hub.memory.mentions import Named
from hub.memory.recall import PROFILE, Priming, Recalled, RecallScope, fit, when
from hub.settings import MemorySection

_NOTES = frozenset({Layer.SEMANTIC.value, Layer.PROCEDURAL.value, Layer.SKILL.value})


class Recaller(Protocol):
    """What priming reads from the memory: `MemoryService` (hub/memory/service.py), which
    primes through this module, so this one names only what it uses."""

    settings: MemorySection
    now: Callable[[], datetime]
    names_in: Callable[[str], Named]

    def linked(self, scope: RecallScope) -> RecallScope: ...
    async def embed_query(self, text: str) -> list[float]: ...
    async def search(
        self,
        scope: RecallScope,
        query: str,
        *,
        limit: int = ...,
        layers: tuple[str, ...] | None = ...,
        since: datetime | None = ...,
        min_importance: float | None = ...,
        dense: list[float] | None = ...,
        explain: bool = ...,
        named: Named | None = ...,
    ) -> list[Recalled]: ...
    def graph(self, anima: str) -> KnowledgeGraph: ...
    def profile_lines(self, scope: RecallScope) -> list[str]: ...


async def primed(memory: Recaller, scope: RecallScope, text: str) -> Priming:
    scope = memory.linked(scope)
    s = memory.settings
    named = memory.names_in(text)
    dense = await memory.embed_query(named.unnamed)  # once, for every section
    recent = await memory.search(
        scope,
        text,
        limit=20,
        layers=(Layer.EPISODIC.value,),
        since=memory.now() - timedelta(hours=s.recent_hours),
        dense=dense,
        explain=False,
        named=named,
    )
    important = await memory.search(
        scope, text, limit=5, min_importance=1.0, dense=dense, explain=False, named=named
    )
    related = await memory.search(scope, text, limit=8, dense=dense, explain=False, named=named)
    # The most relevant that fit, then in time order: fitting in time order cut the newest.
    recent_lines = sorted(_fitted(recent, s.budget_recent), key=lambda pair: pair[0].ts)
    important_lines = _fitted(important, s.budget_important)
    shown = {r.id for r, _ in (*recent_lines, *important_lines)}  # the rest may be related
    seeds = [r.path for r in (*important, *related) if r.layer in _NOTES]
    linked = memory.graph(scope.anima).neighbours(seeds, scope.filter_scopes())
    return Priming(
        {
            PROFILE: fit(memory.profile_lines(scope), s.budget_profile),
            f"Recent activity (last {s.recent_hours:g} hours)": [ln for _, ln in recent_lines],
            "Important": [ln for _, ln in important_lines],
            "Related memories": fit(
                [_line(r) for r in related if r.id not in shown], s.budget_related
            ),
            "Linked notes": fit(
                [f"{item.title or item.path}: {' '.join(item.text.split())}" for item, _ in linked],
                s.budget_graph,
            ),
        }
    )


def _fitted(found: list[Recalled], budget: int) -> list[tuple[Recalled, str]]:
    """The first of `found` whose lines fit `budget`, each with its line (`fit` keeps a
    prefix, the first line cut if it alone is too long)."""
    return list(zip(found, fit([_line(r) for r in found], budget), strict=False))


def _line(recalled: Recalled) -> str:
    flat = " ".join(recalled.text.split())
    return f"[{when(recalled.ts)}] {flat}"
