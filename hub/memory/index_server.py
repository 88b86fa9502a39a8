"""The index on a Qdrant server, through qdrant-client (see hub/memory/index.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import wraps
from typing import Any, Concatenate, ParamSpec, TypeVar

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException

from hub.memory.index import (
    DENSE,
    FLOAT_FIELDS,
    FORMULA_DEFAULTS,
    KEYWORD_FIELDS,
    LEXICAL,
    NOT_CREATED,
    RRF_K,
    SERVER_BATCH,
    Boost,
    Hit,
    IndexPoint,
    IndexSpec,
    IndexUnavailable,
    Lookup,
    MemoryFilter,
    Retriever,
    SparseVec,
    VectorIndex,
    fusion_weights,
    keyword_conditions,
    range_conditions,
)


def _server_filter(flt: MemoryFilter) -> models.Filter:
    must: list[models.Condition] = []
    for key, values in keyword_conditions(flt):
        match: models.Match = (
            models.MatchValue(value=values[0]) if len(values) == 1 else models.MatchAny(any=values)
        )
        must.append(models.FieldCondition(key=key, match=match))
    for key, gte, lte in range_conditions(flt):
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
        formula=models.MultExpression(mult=["$score", lift]), defaults=FORMULA_DEFAULTS
    )


def _server_point(point: IndexPoint) -> models.PointStruct:
    vectors: dict[str, models.Vector] = {DENSE: point.dense}
    if point.sparse.indices:
        sparse = point.sparse
        vectors[LEXICAL] = models.SparseVector(indices=sparse.indices, values=sparse.values)
    return models.PointStruct(id=point.id, vector=vectors, payload=point.payload)


P = ParamSpec("P")
R = TypeVar("R")


def _server_call(
    method: Callable[Concatenate[ServerIndex, P], R],
) -> Callable[Concatenate[ServerIndex, P], R]:
    """`method`, its server's failures (qdrant-client's ApiException: unreachable, an error
    status, an answer it cannot read) raised as IndexUnavailable, the error memory's callers
    handle for either engine."""

    @wraps(method)
    def call(index: ServerIndex, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(index, *args, **kwargs)
        except ApiException as exc:
            raise IndexUnavailable(f"the Qdrant server failed: {exc}") from exc

    return call


class ServerIndex(VectorIndex):
    """The index as one collection on a Qdrant server, whose metadata records dim and
    model_id. The index owns `client` and closes it in close()."""

    def __init__(self, client: QdrantClient, collection: str) -> None:
        self._client = client
        self._name = collection
        try:
            self._exists = client.collection_exists(collection)
        except ApiException as exc:
            raise IndexUnavailable(f"the Qdrant server failed: {exc}") from exc

    @property
    def _open(self) -> bool:
        return self._exists

    def _require(self) -> None:
        if not self._exists:
            raise RuntimeError(NOT_CREATED)

    @_server_call
    def _stored(self) -> IndexSpec | None:
        if not self._exists:
            return None
        meta = self._client.get_collection(self._name).config.metadata or {}
        return IndexSpec(dim=meta.get("dim", -1), model_id=meta.get("model_id", ""))

    @_server_call
    def _create(self, spec: IndexSpec) -> None:
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

    @_server_call
    def _drop(self) -> None:
        if self._exists:
            self._client.delete_collection(self._name)
            self._exists = False

    @_server_call
    def _search(
        self, lookups: list[Lookup], limit: int, candidates: int, boost: Boost | None
    ) -> list[Hit]:
        each = []
        for lookup in lookups:
            vector, using = _server_vector(lookup.vector)
            where = _server_filter(lookup.flt)
            each.append(models.Prefetch(query=vector, using=using, filter=where, limit=candidates))
        fusion = models.RrfQuery(rrf=models.Rrf(k=RRF_K, weights=fusion_weights(lookups)))
        if boost is not None:
            stage = (
                each[0]
                if len(each) == 1
                else models.Prefetch(prefetch=each, query=fusion, limit=candidates)
            )
            response = self._client.query_points(
                self._name, prefetch=[stage], query=_server_formula(boost), limit=limit
            )
        elif len(lookups) == 1:
            vector, using = _server_vector(lookups[0].vector)
            where = _server_filter(lookups[0].flt)
            response = self._client.query_points(
                self._name, query=vector, using=using, query_filter=where, limit=limit
            )
        else:
            response = self._client.query_points(
                self._name, prefetch=each, query=fusion, limit=limit
            )
        return [Hit(str(p.id), p.score, p.payload or {}) for p in response.points]

    @_server_call
    def upsert(self, points: Sequence[IndexPoint]) -> None:
        self._require()
        for start in range(0, len(points), SERVER_BATCH):
            batch = [_server_point(p) for p in points[start : start + SERVER_BATCH]]
            self._client.upsert(self._name, points=batch, wait=True)

    @_server_call
    def delete(self, ids: Sequence[str]) -> None:
        self._require()
        if ids:
            selector = models.PointIdsList(points=list(ids))
            self._client.delete(self._name, points_selector=selector, wait=True)

    @_server_call
    def delete_where(self, flt: MemoryFilter) -> None:
        """Delete every point `flt` matches (e.g. one Anima's, before reindexing it)."""
        if self._exists:
            selector = models.FilterSelector(filter=_server_filter(flt))
            self._client.delete(self._name, points_selector=selector, wait=True)

    @_server_call
    def count(self, flt: MemoryFilter | None = None) -> int:
        if not self._exists:
            return 0
        where = None if flt is None else _server_filter(flt)
        return self._client.count(self._name, count_filter=where, exact=True).count

    @_server_call
    def payloads(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The payloads of those of `ids` the index holds."""
        if not self._exists or not ids:
            return {}
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), SERVER_BATCH):
            batch = list(ids[start : start + SERVER_BATCH])
            for p in self._client.retrieve(self._name, batch, with_payload=True):
                found[str(p.id)] = dict(p.payload or {})
        return found

    def optimize(self) -> None:
        """A Qdrant server optimizes its segments by itself."""

    def unindexed(self) -> int:
        return 0  # the server indexes in the background, by itself

    def purge(self) -> None:
        """Nothing: a Qdrant server keeps a deleted point in its segments until its
        optimizer vacuums them, and in its write-ahead log until the log is cut, in files
        that are the server's to manage, as its backups are (docs/operations.md)."""

    def close(self) -> None:
        self._client.close()
