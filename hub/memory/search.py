"""One search over the index: what a query asks, its retrievers fused in the engine, lifted
by what it asks, rescored, and each text once.

The Memory (service.py) decides whose memories are searched and records what was recalled;
this ranks them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from hub.memory.dates import asks_when, named_span
from hub.memory.index import MemoryFilter, SearchMode, SparseVec, VectorIndex
from hub.memory.lexical import query_vector, tokenize
from hub.memory.lifts import Asked, lift_signals, lifted
from hub.memory.recall import Recalled, boost_at, distinct, rescore, used

# What a search fetches from the index at least: the lifts reorder these and reach deeper
# than the limit (hybrid any@10 0.841 -> 0.850 on LoCoMo with 50 instead of 20).
CANDIDATES = 50


@dataclass(frozen=True, slots=True)
class Wanted:
    """A query as the index is asked it."""

    text: str
    dense: list[float]
    asked: Asked
    limit: int = 10
    mode: SearchMode = SearchMode.HYBRID
    # Run each retriever alone as well, to say why each result matched (what the API and
    # CLI show; priming skips it, as it costs two or three more queries).
    explain: bool = True
    # The query with the people it names as "I" (hub/memory/mentions.py): what the people retriever
    # searches their words for. Every line of theirs carries their name in its label, so
    # there the name is no search term, only noise (bench/README.md, session 25).
    own_words: str | None = None


def asked_in(query: str, now: datetime, people: tuple[str, ...]) -> Asked:
    """What a query asks besides its words: the people it names, a time, or when."""
    return Asked(people, named_span(query, now), asks_when(query), frozenset(tokenize(query)))


def ranked(
    index: VectorIndex,
    flt: MemoryFilter,
    wanted: Wanted,
    now: datetime,
    uses: Callable[[str], int],
) -> list[Recalled]:
    """The best `wanted.limit` results within `flt`; `uses` counts an item's recalls."""
    asked = wanted.asked
    sparse = SparseVec(*query_vector(wanted.text))
    own = sparse  # what the people retriever's lexical half searches, if the query names any
    if asked.people and wanted.own_words is not None:
        own = SparseVec(*query_vector(wanted.own_words))
    span = asked.span
    fused = index.query(
        wanted.dense,
        sparse,
        flt,
        max(wanted.limit * 2, CANDIDATES),
        wanted.mode,
        boost=boost_at(now),
        people=asked.people,
        span=(span[0].timestamp(), span[1].timestamp()) if span else None,
        own_terms=own,
    )
    hits = lifted(used(fused, now, uses), asked, flt, index.payloads)
    sources = lift_signals(fused, hits, asked) if wanted.explain else {}
    if wanted.explain and wanted.mode is SearchMode.HYBRID:
        _found_alone(index, sources, wanted.dense, sparse, own, flt, asked.people, wanted.limit)
    return distinct(rescore(hits, now, sources, boosted=True))[: wanted.limit]


def _found_alone(
    index: VectorIndex,
    sources: dict[str, set[str]],
    dense: list[float],
    sparse: SparseVec,
    own: SparseVec,
    flt: MemoryFilter,
    people: tuple[str, ...],
    limit: int,
) -> None:
    """Add to `sources` what each retriever alone finds: why a fused result matched.
    `own` is the lexical query the people retriever searches the named people's words for."""
    for name, single in (("dense", SearchMode.DENSE), ("lexical", SearchMode.LEXICAL)):
        for hit in index.query(dense, sparse, flt, limit * 2, single):
            sources.setdefault(hit.id, set()).add(name)
    if people:
        for hit in index.query(dense, own, replace(flt, people=people), limit):
            sources.setdefault(hit.id, set()).add("person")
