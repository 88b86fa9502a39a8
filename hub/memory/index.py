"""The vector index over an Anima's memory: one interface (`VectorIndex`), two Qdrant engines.

Memory lives in markdown files; this index is derived from them and can always be
rebuilt. Each point carries a cosine "dense" embedding, an IDF-weighted "lexical"
sparse vector and a payload (anima, layer, scope, ts, importance, ...).

Two backends exist because the hub runs in two shapes:

- `EdgeIndex` (hub/memory/index_edge.py) embeds Qdrant Edge in the hub process. A
  single-machine install then needs no second service: the index is a directory next to
  the memory files.
- `ServerIndex` (hub/memory/index_server.py) talks to a Qdrant server through
  qdrant-client, for deployments where several hub processes share one index (and, with
  ":memory:", for tests).

Both apply the `MemoryFilter` inside the engine (so a filtered query still returns
`limit` hits, and another person's private memory is never even a candidate), fuse
hybrid results with the engine's weighted reciprocal rank fusion using the same `RRF_K`
and `fusion_weights`, and, given a `Boost`, lift the fused candidates by recency and
importance with the engine's own formula query, so a query ranks the same on either. One
test suite runs against both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

DENSE = "dense"
LEXICAL = "lexical"
KEYWORD_FIELDS = ("anima", "layer", "scope", "person", "channel")
FLOAT_FIELDS = ("ts", "importance")
# Reciprocal rank fusion constant, given to both engines explicitly. Not the paper's 60:
# on LoCoMo, k=5 lifted hybrid recall@10 from 0.690 to 0.723 (bench/recall_locomo.py), as a
# turn one retriever ranks first should beat turns that are middling in both lists.
RRF_K = 5
# In hybrid fusion a dense list's ranks are divided by this weight (the engines' weighted RRF):
# a turn dense ranks 15th counts as one lexical ranks 10th. Once the query's names became "I",
# dense alone (any@10 0.858 on LoCoMo) far outranked lexical (about 0.75), and equal votes let
# middling lexical matches push out dense ones: hybrid any / all@10 0.900 / 0.776 -> 0.904 /
# 0.781 at 1.5, and 0.902-0.906 any@10 at every weight from 1.2 to 3 (bench/README.md).
DENSE_WEIGHT = 1.5
DEFAULT_COLLECTION = "animahub_memory"
SERVER_BATCH = 256  # points per upsert request to a Qdrant server
NOT_CREATED = "the index does not exist yet: call ensure() first"


class IndexUnavailable(RuntimeError):
    """The index's engine failed a call (a Qdrant server down, refusing, or answering
    with an error). A RuntimeError, as the embedded engine's failures are: recall logs it
    and the turn goes on without memories (hub/turns/context.py)."""


FORMULA_DEFAULTS = {"importance": 0.0, "ts": 0.0}


@dataclass(frozen=True)
class Boost:
    """Lifts the engine applies to the candidates' fused score `s` (a Qdrant formula):
    s × (1 + recency_weight · 0.5^(age / half_life) + importance_weight · importance),
    age from the payload's `ts` to `now` (epoch seconds)."""

    now: float
    half_life_s: float
    recency_weight: float
    importance_weight: float


@dataclass(frozen=True)
class SparseVec:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class IndexPoint:
    id: str  # a UUID string
    dense: list[float]
    sparse: SparseVec
    payload: dict[str, Any]


@dataclass(frozen=True)
class MemoryFilter:
    anima: str
    layers: tuple[str, ...] | None = None  # payload "layer" in these
    scopes: tuple[str, ...] | None = None  # payload "scope" in these
    since: float | None = None  # payload "ts" >= since (epoch seconds)
    until: float | None = None  # payload "ts" <= until
    min_importance: float | None = None  # payload "importance" >=
    people: tuple[str, ...] | None = None  # payload "person" in these


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    payload: dict[str, Any]


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    DENSE = "dense"
    LEXICAL = "lexical"


@dataclass(frozen=True)
class IndexSpec:
    """What the stored vectors were made with; a change means a rebuild."""

    dim: int
    model_id: str


Retriever = list[float] | SparseVec


@dataclass(frozen=True)
class Lookup:
    """One prefetch: a query vector and the filter it searches under."""

    vector: Retriever
    flt: MemoryFilter


def fusion_weights(lookups: Sequence[Lookup]) -> list[float] | None:
    """Each list's weight in the fusion, in the lookups' order; None when every list is of one
    kind (dense or lexical alone), which fuses them as plain RRF."""
    dense = [isinstance(x.vector, list) for x in lookups]
    if all(dense) or not any(dense):
        return None
    return [DENSE_WEIGHT if is_dense else 1.0 for is_dense in dense]


def _retrievers(
    dense: list[float] | None, sparse: SparseVec | None, mode: SearchMode
) -> list[Retriever]:
    """The query vectors a mode uses; hybrid uses whichever it was given."""
    if mode is SearchMode.DENSE and dense is None:
        raise ValueError("dense mode needs a dense query vector")
    if mode is SearchMode.LEXICAL and sparse is None:
        raise ValueError("lexical mode needs a sparse query vector")
    found: list[Retriever] = []
    if dense is not None and mode is not SearchMode.LEXICAL:
        found.append(dense)
    if sparse is not None and sparse.indices and mode is not SearchMode.DENSE:
        found.append(sparse)
    return found


def keyword_conditions(flt: MemoryFilter) -> list[tuple[str, list[str]]]:
    """Keyword conditions: the field's value must be one of the listed ones."""
    found = [("anima", [flt.anima])]
    if flt.layers is not None:
        found.append(("layer", list(flt.layers)))
    if flt.scopes is not None:
        found.append(("scope", list(flt.scopes)))
    if flt.people is not None:
        found.append(("person", list(flt.people)))
    return found


def range_conditions(flt: MemoryFilter) -> list[tuple[str, float | None, float | None]]:
    """Inclusive float ranges as (field, gte, lte)."""
    found: list[tuple[str, float | None, float | None]] = []
    if flt.since is not None or flt.until is not None:
        found.append(("ts", flt.since, flt.until))
    if flt.min_importance is not None:
        found.append(("importance", flt.min_importance, None))
    return found


def admits(flt: MemoryFilter, payload: dict[str, Any]) -> bool:
    """Whether a point with this payload passes the filter (for points fetched by id)."""
    for key, values in keyword_conditions(flt):
        if payload.get(key) not in values:
            return False
    for key, gte, lte in range_conditions(flt):
        value = payload.get(key)
        if not isinstance(value, int | float):
            return False
        if (gte is not None and value < gte) or (lte is not None and value > lte):
            return False
    return True


class VectorIndex(ABC):
    """An index, whichever engine holds it: what memory calls (the public methods), and the
    rules both engines share (`ensure`, `clear`, `query`'s search modes) built on what each
    engine does its own way (the protected primitives)."""

    _wanted: IndexSpec | None = None  # what the last ensure() asked for

    @abstractmethod
    def _stored(self) -> IndexSpec | None:
        """The settings the existing index was made with; None if there is none."""

    @abstractmethod
    def _create(self, spec: IndexSpec) -> None:
        """Create the empty index (vectors and payload indexes) and record `spec`."""

    @abstractmethod
    def _drop(self) -> None:
        """Remove the index and everything in it."""

    @abstractmethod
    def _search(
        self, lookups: list[Lookup], limit: int, candidates: int, boost: Boost | None
    ) -> list[Hit]:
        """One lookup alone, or each one prefetched and fused with RRF; with a boost,
        that ranking is a prefetch stage whose candidates a formula query rescores."""

    @property
    @abstractmethod
    def _open(self) -> bool:
        """Whether the index exists and is open."""

    def ensure(self, dim: int, model_id: str) -> bool:
        """Create the index if missing; False if it was made with another dim or model."""
        self._wanted = IndexSpec(dim, model_id)
        stored = self._stored()
        if stored is None:
            self._create(self._wanted)
            return True
        return stored == self._wanted

    @abstractmethod
    def upsert(self, points: Sequence[IndexPoint]) -> None:
        """Add the points, replacing those of the same ids."""

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> None:
        """Remove the points of these ids."""

    @abstractmethod
    def delete_where(self, flt: MemoryFilter) -> None:
        """Delete every point `flt` matches (e.g. one Anima's, before reindexing it)."""

    @abstractmethod
    def count(self, flt: MemoryFilter | None = None) -> int:
        """How many points (that `flt` matches); 0 before the index exists."""

    @abstractmethod
    def payloads(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The payloads of those of `ids` the index holds."""

    @abstractmethod
    def optimize(self) -> None:
        """Build the search graph over what was appended (blocking)."""

    @abstractmethod
    def unindexed(self) -> int:
        """About how many points dense search scans one by one."""

    @abstractmethod
    def purge(self) -> None:
        """Leave nothing of deleted points in the index's own files (forgetting a person)."""

    @abstractmethod
    def close(self) -> None:
        """Release the engine (the index can be opened again)."""

    def clear(self) -> None:
        """Drop every point, and recreate the index empty with the settings of the last
        ensure() (or the stored ones): a rebuild is ensure() -> False, clear(), reindex."""
        spec = self._wanted or self._stored()
        self._drop()
        if spec is not None:
            self._create(spec)

    def query(
        self,
        dense: list[float] | None,
        sparse: SparseVec | None,
        flt: MemoryFilter,
        limit: int,
        mode: SearchMode = SearchMode.HYBRID,
        candidates: int = 50,
        boost: Boost | None = None,
        people: tuple[str, ...] = (),
        span: tuple[float, float] | None = None,
        own_terms: SparseVec | None = None,
    ) -> list[Hit]:
        """Hybrid uses the query vectors it is given; an empty sparse vector counts as none.

        `people` (person ids the query names) adds each retriever again, searching only
        what those people said, to the fusion: their own words then compete among
        themselves, not with every mention of them by others (bench/README.md); its lexical
        half searches `own_terms` if given (the query without their names). `span`
        (epoch seconds [start, end) of a time the query names) does the same for what was
        said within it."""
        vectors = _retrievers(dense, sparse, mode)
        if not vectors or not self._open:
            return []
        lookups = [Lookup(v, flt) for v in vectors]
        if people:
            focused = replace(flt, people=people)
            own = vectors if own_terms is None else _retrievers(dense, own_terms, mode)
            lookups += [Lookup(v, focused) for v in own]
        if span is not None and (within := _within(flt, span)) is not None:
            lookups += [Lookup(v, within) for v in vectors]
        return self._search(lookups, limit, candidates, boost)


def _within(flt: MemoryFilter, span: tuple[float, float]) -> MemoryFilter | None:
    """The filter narrowed to the span ("until" is inclusive, the span's end is not); None
    when nothing is left of it."""
    since = span[0] if flt.since is None else max(flt.since, span[0])
    until = span[1] - 0.001 if flt.until is None else min(flt.until, span[1] - 0.001)
    return replace(flt, since=since, until=until) if since <= until else None
