"""An admin's memory search, as the API and the CLI show it: every privacy scope unless
narrowed, any layer, including "people" (the profiles' learned facts, not in the index)."""

from __future__ import annotations

from typing import Any

from hub.memory.documents import SEARCH_LAYERS
from hub.memory.recall import RecallScope
from hub.memory.service import MemoryService


async def search_rows(
    memory: MemoryService, name: str, query: str, scopes: tuple[str, ...], layer: str, limit: int
) -> list[dict[str, Any]]:
    """An admin's search of one Anima's memory, as the API and the CLI show it."""
    if layer == "people":
        # person:ID scopes: those people's facts, DM ones too; all: everyone's; only shared
        # or channel scopes: what was not learned in a DM.
        people = [s.removeprefix("person:") for s in scopes if s.startswith("person:")]
        facts = memory.profiles.search(
            query, people or None, in_dm=bool(people) or not scopes, limit=limit
        )
        return [
            {
                "path": f"shared/users/{person}.md",
                "section": "",
                "layer": "interpersonal",
                "text": fact.fact,
                "score": round(score, 6),
                "why": ["lexical"],
            }
            for person, fact, score in facts
        ]
    found = await memory.search(
        RecallScope.admin(name, scopes), query, limit=limit, layers=SEARCH_LAYERS[layer]
    )
    return [
        {
            "path": r.path,
            "section": r.section,
            "layer": r.layer,
            "text": r.text,
            "score": round(r.score, 6),
            "why": r.why,
        }
        for r in found
    ]
