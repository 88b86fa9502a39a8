"""Memory search as the API, the CLI and the MCP tools show it: any layer, including
"people" (the profiles' learned facts, not in the index), within a `RecallScope`: an
admin's every scope unless narrowed, a person's what a DM with them would recall
(hub/views/mcp_tools.py `Reader.scope`). Each row says why it matched (hub/memory/explain.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hub.memory.documents import SEARCH_LAYERS, Layer, search_layer
from hub.memory.explain import why
from hub.memory.recall import Recalled, RecallScope
from hub.memory.service import MemoryService

NameOf = Callable[[str], str]
"""A person's display name from their id; unknown ids answer the id itself."""


def scopes_and_layer(scope: str, layer: str) -> tuple[tuple[str, ...], str]:
    """The privacy scopes ("all" or empty: every one; else comma-separated shared,
    person:ID, channel:KEY) and the layer a search names. A layer's name given as the scope
    (`?scope=knowledge`, as clients of the first API wrote it) is the layer; so is a layer's
    own name as results show it ("procedural"). ValueError says what is wrong."""
    if scope != "all" and search_layer(scope):
        scope, layer = "all", scope
    named = search_layer(layer)
    if named is None:
        raise ValueError(f"bad layer {layer!r}: use {', '.join(SEARCH_LAYERS)}")
    layer = named
    if scope in ("", "all"):
        return (), layer
    parts = tuple(p.strip() for p in scope.split(",") if p.strip())
    for part in parts:
        if part != "shared" and not part.startswith(("person:", "channel:")):
            raise ValueError(f"bad scope {part!r}: use all, shared, person:ID or channel:KEY")
    return parts, layer


async def recall(
    memory: MemoryService,
    scope: RecallScope,
    query: str,
    layer: str,
    limit: int,
    explain: bool = True,
) -> list[Recalled]:
    """What a search of one layer (a `SEARCH_LAYERS` name) finds within `scope`."""
    if layer != "people":
        return await memory.search(
            scope, query, limit=limit, layers=SEARCH_LAYERS[layer], explain=explain
        )
    if scope.admin_scopes is not None:
        # person:ID scopes: those people's facts, DM ones too; all: everyone's; only shared
        # or channel scopes: what was not learned in a DM.
        scopes = scope.admin_scopes
        people = [s.removeprefix("person:") for s in scopes if s.startswith("person:")]
        facts = memory.profiles.search(
            query, people or None, in_dm=bool(people) or not scopes, limit=limit
        )
    else:  # the conversation's own person; their DM facts only in a DM
        own = [scope.person_id] if scope.person_id else []
        facts = memory.profiles.search(query, own, in_dm=scope.is_dm, limit=limit)
    return [
        Recalled(
            id=f"{person}:{fact.fact}",
            layer=Layer.INTERPERSONAL.value,
            path=f"shared/users/{person}.md",
            section="",
            text=fact.fact,
            score=score,
            why=["lexical", "profile"],
            person=person,
        )
        for person, fact, score in facts
    ]


def rows(found: list[Recalled], query: str, name_of: NameOf | None = None) -> list[dict[str, Any]]:
    """Results as JSON rows: `why` says in words why each matched, `signals` the same as
    codes (dense, lexical, person, neighbour, when, says when, profile, recent, important)."""
    return [
        {
            "path": r.path,
            "section": r.section,
            "layer": r.layer,
            "text": r.text,
            "score": round(r.score, 6),
            "why": why(r.why, query, r.text, _name(r.person, name_of)),
            "signals": r.why,
        }
        for r in found
    ]


def _name(person: str | None, name_of: NameOf | None) -> str | None:
    if person is None:
        return None
    return name_of(person) if name_of is not None else person


async def search_rows(
    memory: MemoryService,
    name: str,
    query: str,
    scopes: tuple[str, ...],
    layer: str,
    limit: int,
    name_of: NameOf | None = None,
) -> list[dict[str, Any]]:
    """An admin's search of one Anima's memory, as the API and the CLI show it."""
    found = await recall(memory, RecallScope.admin(name, scopes), query, layer, limit)
    return rows(found, query, name_of)
