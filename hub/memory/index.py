"""The vector index over an Anima's memory: one protocol, two Qdrant engines.

Memory lives in markdown files; this index is derived from them and can always be
rebuilt. Each point carries a cosine "dense" embedding, an IDF-weighted "lexical"
sparse vector and a payload (anima, layer, scope, ts, importance, ...).

Two backends exist because the hub runs in two shapes:

- `EdgeIndex` embeds Qdrant Edge in the hub process. A single-machine install then
  needs no second service: the index is a directory next to the memory files.
- `ServerIndex` talks to a Qdrant server through qdrant-client, for deployments
  where several hub processes share one index (and, with ":memory:", for tests).

Both apply the `MemoryFilter` inside the engine (so a filtered query still returns
`limit` hits, and another person's private memory is never even a candidate), fuse
hybrid results with the engine's reciprocal rank fusion using the same `RRF_K`, and, given
a `Boost`, lift the fused candidates by recency and importance with the engine's own
formula query, so a query ranks the same on either. One test suite runs against both.
"""

from __future__ import annotations

import json
import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import qdrant_edge as qe
from qdrant_client import QdrantClient, models

if TYPE_CHECKING:  # aliases that exist only in qdrant_edge's stubs
    from qdrant_edge import ConditionType, NamedVector

DENSE = "dense"
LEXICAL = "lexical"
KEYWORD_FIELDS = ("anima", "layer", "scope", "person", "channel")
FLOAT_FIELDS = ("ts", "importance")
# Reciprocal rank fusion constant, given to both engines explicitly. Not the paper's 60:
# on LoCoMo, k=5 lifted hybrid recall@10 from 0.690 to 0.723 (bench/recall_locomo.py), as a
# turn one retriever ranks first should beat turns that are middling in both lists.
RRF_K = 5
DEFAULT_COLLECTION = "animahub_memory"
SERVER_BATCH = 256  # points per upsert request to a Qdrant server
NOT_CREATED = "the index does not exist yet: call ensure() first"
_FORMULA_DEFAULTS = {"importance": 0.0, "ts": 0.0}


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


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    payload: dict[str, Any]


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    DENSE = "dense"
    LEXICAL = "lexical"


class VectorIndex(Protocol):
    def ensure(self, dim: int, model_id: str) -> bool: ...
    def upsert(self, points: Sequence[IndexPoint]) -> None: ...
    def delete(self, ids: Sequence[str]) -> None: ...
    def delete_where(self, flt: MemoryFilter) -> None: ...
    def query(
        self,
        dense: list[float] | None,
        sparse: SparseVec | None,
        flt: MemoryFilter,
        limit: int,
        mode: SearchMode = SearchMode.HYBRID,
        candidates: int = 50,
        boost: Boost | None = None,
    ) -> list[Hit]: ...
    def count(self, flt: MemoryFilter | None = None) -> int: ...
    def clear(self) -> None: ...
    def optimize(self) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class _Spec:
    """What the stored vectors were made with; a change means a rebuild."""

    dim: int
    model_id: str


Retriever = list[float] | SparseVec


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


def _matches(flt: MemoryFilter) -> list[tuple[str, list[str]]]:
    """Keyword conditions: the field's value must be one of the listed ones."""
    found = [("anima", [flt.anima])]
    if flt.layers is not None:
        found.append(("layer", list(flt.layers)))
    if flt.scopes is not None:
        found.append(("scope", list(flt.scopes)))
    return found


def _ranges(flt: MemoryFilter) -> list[tuple[str, float | None, float | None]]:
    """Inclusive float ranges as (field, gte, lte)."""
    found: list[tuple[str, float | None, float | None]] = []
    if flt.since is not None or flt.until is not None:
        found.append(("ts", flt.since, flt.until))
    if flt.min_importance is not None:
        found.append(("importance", flt.min_importance, None))
    return found


class _Backend(ABC):
    """What both engines share: the ensure/clear rules and the search modes."""

    _wanted: _Spec | None = None  # what the last ensure() asked for

    @abstractmethod
    def _stored(self) -> _Spec | None:
        """The settings the existing index was made with; None if there is none."""

    @abstractmethod
    def _create(self, spec: _Spec) -> None:
        """Create the empty index (vectors and payload indexes) and record `spec`."""

    @abstractmethod
    def _drop(self) -> None:
        """Remove the index and everything in it."""

    @abstractmethod
    def _search(
        self,
        vectors: list[Retriever],
        flt: MemoryFilter,
        limit: int,
        candidates: int,
        boost: Boost | None,
    ) -> list[Hit]:
        """One retriever alone, or each one prefetched and fused with RRF; with a boost,
        that ranking is a prefetch stage whose candidates a formula query rescores."""

    @property
    @abstractmethod
    def _open(self) -> bool:
        """Whether the index exists and is open."""

    def ensure(self, dim: int, model_id: str) -> bool:
        """Create the index if missing; False if it was made with another dim or model."""
        self._wanted = _Spec(dim, model_id)
        stored = self._stored()
        if stored is None:
            self._create(self._wanted)
            return True
        return stored == self._wanted

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
    ) -> list[Hit]:
        """Hybrid uses the query vectors it is given; an empty sparse vector counts as none."""
        vectors = _retrievers(dense, sparse, mode)
        if not vectors or not self._open:
            return []
        return self._search(vectors, flt, limit, candidates, boost)


# ---------------------------------------------------------------- Qdrant Edge


def _edge_filter(flt: MemoryFilter) -> qe.Filter:
    must: list[ConditionType] = []
    for key, values in _matches(flt):
        match = qe.MatchValue(values[0]) if len(values) == 1 else qe.MatchAny(values)
        must.append(qe.FieldCondition(key, match=match))
    for key, gte, lte in _ranges(flt):
        must.append(qe.FieldCondition(key, range=qe.RangeFloat(gte=gte, lte=lte)))
    return qe.Filter(must=must)


def _edge_nearest(vector: Retriever) -> qe.Query:
    if isinstance(vector, SparseVec):
        return qe.Query.Nearest(qe.SparseVector(vector.indices, vector.values), using=LEXICAL)
    return qe.Query.Nearest(vector, using=DENSE)


def _edge_formula(boost: Boost) -> qe.Formula:
    e = qe.Expression
    recency = e.Decay(
        qe.DecayKind.Exp,
        e.Variable("ts"),
        target=e.Constant(boost.now),
        midpoint=0.5,
        scale=boost.half_life_s,
    )
    lift = e.Sum(
        [
            e.Constant(1.0),
            e.Mult([e.Constant(boost.recency_weight), recency]),
            e.Mult([e.Constant(boost.importance_weight), e.Variable("importance")]),
        ]
    )
    return qe.Formula(e.Mult([e.Variable("$score"), lift]), defaults=_FORMULA_DEFAULTS)


def _edge_point(point: IndexPoint) -> qe.Point:
    vectors: dict[str, NamedVector] = {DENSE: point.dense}
    if point.sparse.indices:
        vectors[LEXICAL] = qe.SparseVector(point.sparse.indices, point.sparse.values)
    return qe.Point(point.id, vectors, point.payload)


class EdgeIndex(_Backend):
    """The index embedded in the hub process, in directory `path`.

    `path/shard/` is the Edge shard; `path/index.json` records the dim and model_id
    its vectors were made with. Only one EdgeIndex may have a path open at a time.
    """

    def __init__(self, path: Path) -> None:
        self._shard_path = path / "shard"
        self._meta_path = path / "index.json"
        self._shard: qe.EdgeShard | None = None
        if self._stored() is not None:
            self._shard = qe.EdgeShard.load(str(self._shard_path))

    @property
    def _open(self) -> bool:
        return self._shard is not None

    def _stored(self) -> _Spec | None:
        if not (self._meta_path.is_file() and self._shard_path.is_dir()):
            return None
        data = json.loads(self._meta_path.read_text(encoding="utf-8"))
        return _Spec(dim=data["dim"], model_id=data["model_id"])

    def _live(self) -> qe.EdgeShard:
        if self._shard is None:
            raise RuntimeError(NOT_CREATED)
        return self._shard

    def _create(self, spec: _Spec) -> None:
        self._drop()  # a shard without index.json is left over from a crash
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=spec.dim, distance=qe.Distance.Cosine)},
            sparse_vectors={LEXICAL: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        self._shard = qe.EdgeShard.create(str(self._shard_path), config)
        kinds = [(n, qe.PayloadSchemaType.Keyword) for n in KEYWORD_FIELDS]
        kinds += [(n, qe.PayloadSchemaType.Float) for n in FLOAT_FIELDS]
        for name, kind in kinds:
            self._shard.update(qe.UpdateOperation.create_field_index(name, kind))
        # Written last and atomically: index.json marks a complete shard.
        tmp = self._meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(spec)), encoding="utf-8")
        os.replace(tmp, self._meta_path)

    def _drop(self) -> None:
        self.close()
        self._meta_path.unlink(missing_ok=True)
        if self._shard_path.exists():
            shutil.rmtree(self._shard_path)

    def _search(
        self,
        vectors: list[Retriever],
        flt: MemoryFilter,
        limit: int,
        candidates: int,
        boost: Boost | None,
    ) -> list[Hit]:
        where = _edge_filter(flt)
        each = [qe.Prefetch(candidates, _edge_nearest(v), filter=where) for v in vectors]
        fusion = qe.Fusion.Rrf(k=RRF_K)
        if boost is not None:
            stage = each[0]
            if len(each) > 1:
                stage = qe.Prefetch(candidates, fusion, each)  # type: ignore[arg-type]  # stubs
            request = qe.QueryRequest(
                limit=limit, prefetches=[stage], query=_edge_formula(boost), with_payload=True
            )
        elif len(vectors) == 1:
            query = _edge_nearest(vectors[0])
            request = qe.QueryRequest(limit=limit, query=query, filter=where, with_payload=True)
        else:
            request = qe.QueryRequest(
                limit=limit,
                prefetches=each,
                query=fusion,  # type: ignore[arg-type]  # stubs omit its base
                with_payload=True,
            )
        return [Hit(str(p.id), p.score, p.payload or {}) for p in self._live().query(request)]

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        shard = self._live()
        if points:
            shard.update(qe.UpdateOperation.upsert_points([_edge_point(p) for p in points]))

    def delete(self, ids: Sequence[str]) -> None:
        shard = self._live()
        if ids:
            shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def delete_where(self, flt: MemoryFilter) -> None:
        """Delete every point `flt` matches (e.g. one Anima's, before reindexing it)."""
        if self._shard is not None:
            self._shard.update(qe.UpdateOperation.delete_points_by_filter(_edge_filter(flt)))

    def count(self, flt: MemoryFilter | None = None) -> int:
        if self._shard is None:
            return 0
        where = None if flt is None else _edge_filter(flt)
        return self._shard.count(qe.CountRequest(exact=True, filter=where))

    def optimize(self) -> None:
        """Build the HNSW index over what was appended (dense queries stop scanning).

        Blocking and GIL-holding (~28 s at 100,000 points): for offline use such as
        `animahub repair-rag`, never on a serving hub's event loop or its threads."""
        if self._shard is not None:
            self._shard.optimize()

    def close(self) -> None:
        if self._shard is not None:
            self._shard.close()
            self._shard = None


# ---------------------------------------------------------------- Qdrant server


def _server_filter(flt: MemoryFilter) -> models.Filter:
    must: list[models.Condition] = []
    for key, values in _matches(flt):
        match: models.Match = (
            models.MatchValue(value=values[0]) if len(values) == 1 else models.MatchAny(any=values)
        )
        must.append(models.FieldCondition(key=key, match=match))
    for key, gte, lte in _ranges(flt):
        must.append(models.FieldCondition(key=key, range=models.Range(gte=gte, lte=lte)))
    return models.Filter(must=must)


def _server_vector(vector: Retriever) -> tuple[list[float] | models.SparseVector, str]:
    if isinstance(vector, SparseVec):
        return models.SparseVector(indices=vector.indices, values=vector.values), LEXICAL
    return vector, DENSE


def _server_formula(boost: Boost) -> models.FormulaQuery:
    recency = models.ExpDecayExpression(
        exp_decay=models.DecayParamsExpression(
            x="ts", target=boost.now, scale=boost.half_life_s, midpoint=0.5
        )
    )
    lift = models.SumExpression(
        sum=[
            1.0,
            models.MultExpression(mult=[boost.recency_weight, recency]),
            models.MultExpression(mult=[boost.importance_weight, "importance"]),
        ]
    )
    return models.FormulaQuery(
        formula=models.MultExpression(mult=["$score", lift]), defaults=_FORMULA_DEFAULTS
    )


def _server_point(point: IndexPoint) -> models.PointStruct:
    vectors: dict[str, models.Vector] = {DENSE: point.dense}
    if point.sparse.indices:
        sparse = point.sparse
        vectors[LEXICAL] = models.SparseVector(indices=sparse.indices, values=sparse.values)
    return models.PointStruct(id=point.id, vector=vectors, payload=point.payload)


class ServerIndex(_Backend):
    """The index as one collection on a Qdrant server, whose metadata records dim and
    model_id. The index owns `client` and closes it in close()."""

    def __init__(self, client: QdrantClient, collection: str) -> None:
        self._client = client
        self._name = collection
        self._exists = client.collection_exists(collection)

    @property
    def _open(self) -> bool:
        return self._exists

    def _require(self) -> None:
        if not self._exists:
            raise RuntimeError(NOT_CREATED)

    def _stored(self) -> _Spec | None:
        if not self._exists:
            return None
        meta = self._client.get_collection(self._name).config.metadata or {}
        return _Spec(dim=meta.get("dim", -1), model_id=meta.get("model_id", ""))

    def _create(self, spec: _Spec) -> None:
        dense = models.VectorParams(size=spec.dim, distance=models.Distance.COSINE)
        lexical = models.SparseVectorParams(modifier=models.Modifier.IDF)
        self._client.create_collection(
            self._name,
            vectors_config={DENSE: dense},
            sparse_vectors_config={LEXICAL: lexical},
            metadata=asdict(spec),
        )
        schemas = [(n, models.PayloadSchemaType.KEYWORD) for n in KEYWORD_FIELDS]
        schemas += [(n, models.PayloadSchemaType.FLOAT) for n in FLOAT_FIELDS]
        for name, schema in schemas:
            self._client.create_payload_index(self._name, name, field_schema=schema)
        self._exists = True

    def _drop(self) -> None:
        if self._exists:
            self._client.delete_collection(self._name)
            self._exists = False

    def _search(
        self,
        vectors: list[Retriever],
        flt: MemoryFilter,
        limit: int,
        candidates: int,
        boost: Boost | None,
    ) -> list[Hit]:
        where = _server_filter(flt)
        pairs = [_server_vector(v) for v in vectors]
        each = [models.Prefetch(query=v, using=u, filter=where, limit=candidates) for v, u in pairs]
        fusion = models.RrfQuery(rrf=models.Rrf(k=RRF_K))
        if boost is not None:
            stage = (
                each[0]
                if len(each) == 1
                else models.Prefetch(prefetch=each, query=fusion, limit=candidates)
            )
            response = self._client.query_points(
                self._name, prefetch=[stage], query=_server_formula(boost), limit=limit
            )
        elif len(pairs) == 1:
            vector, using = pairs[0]
            response = self._client.query_points(
                self._name, query=vector, using=using, query_filter=where, limit=limit
            )
        else:
            response = self._client.query_points(
                self._name, prefetch=each, query=fusion, limit=limit
            )
        return [Hit(str(p.id), p.score, p.payload or {}) for p in response.points]

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        self._require()
        for start in range(0, len(points), SERVER_BATCH):
            batch = [_server_point(p) for p in points[start : start + SERVER_BATCH]]
            self._client.upsert(self._name, points=batch, wait=True)

    def delete(self, ids: Sequence[str]) -> None:
        self._require()
        if ids:
            selector = models.PointIdsList(points=list(ids))
            self._client.delete(self._name, points_selector=selector, wait=True)

    def delete_where(self, flt: MemoryFilter) -> None:
        """Delete every point `flt` matches (e.g. one Anima's, before reindexing it)."""
        if self._exists:
            selector = models.FilterSelector(filter=_server_filter(flt))
            self._client.delete(self._name, points_selector=selector, wait=True)

    def count(self, flt: MemoryFilter | None = None) -> int:
        if not self._exists:
            return 0
        where = None if flt is None else _server_filter(flt)
        return self._client.count(self._name, count_filter=where, exact=True).count

    def optimize(self) -> None:
        """A Qdrant server optimizes its segments by itself."""

    def close(self) -> None:
        self._client.close()


def open_index(
    path: Path | None, url: str | None, collection: str = DEFAULT_COLLECTION
) -> VectorIndex:
    """A server index when `url` is given (":memory:" for qdrant-client's local mode),
    else an embedded Edge index in directory `path`."""
    if url is not None:
        client = QdrantClient(":memory:") if url == ":memory:" else QdrantClient(url=url)
        return ServerIndex(client, collection)
    if path is None:
        raise ValueError("an index needs a directory (Edge) or a URL (Qdrant server)")
    return EdgeIndex(path)
