"""The index embedded in the hub process: Qdrant Edge (see hub/memory/index.py)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import qdrant_edge as qe

from hub.memory.index import (
    DENSE,
    FLOAT_FIELDS,
    FORMULA_DEFAULTS,
    KEYWORD_FIELDS,
    LEXICAL,
    NOT_CREATED,
    RRF_K,
    Boost,
    Hit,
    IndexPoint,
    IndexSpec,
    Lookup,
    MemoryFilter,
    Retriever,
    SparseVec,
    VectorIndex,
    fusion_weights,
    keyword_conditions,
    range_conditions,
)

if TYPE_CHECKING:  # aliases that exist only in qdrant_edge's stubs
    from qdrant_edge import ConditionType, NamedVector, PointId


def _edge_filter(flt: MemoryFilter) -> qe.Filter:
    must: list[ConditionType] = []
    for key, values in keyword_conditions(flt):
        match = qe.MatchValue(values[0]) if len(values) == 1 else qe.MatchAny(values)
        must.append(qe.FieldCondition(key, match=match))
    for key, gte, lte in range_conditions(flt):
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
    return qe.Formula(e.Mult([e.Variable("$score"), lift]), defaults=FORMULA_DEFAULTS)


def _edge_point(point: IndexPoint) -> qe.Point:
    vectors: dict[str, NamedVector] = {DENSE: point.dense}
    if point.sparse.indices:
        vectors[LEXICAL] = qe.SparseVector(point.sparse.indices, point.sparse.values)
    return qe.Point(point.id, vectors, point.payload)


def _new_shard(path: Path, dim: int) -> qe.EdgeShard:
    """An empty shard at `path` with the hub's vectors and payload indexes."""
    config = qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
        sparse_vectors={LEXICAL: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
    )
    shard = qe.EdgeShard.create(str(path), config)
    kinds = [(n, qe.PayloadSchemaType.Keyword) for n in KEYWORD_FIELDS]
    kinds += [(n, qe.PayloadSchemaType.Float) for n in FLOAT_FIELDS]
    for name, kind in kinds:
        shard.update(qe.UpdateOperation.create_field_index(name, kind))
    return shard


class EdgeIndex(VectorIndex):
    """The index embedded in the hub process, in directory `path`.

    `path/shard/` is the Edge shard; `path/index.json` records the dim and model_id
    its vectors were made with. Only one EdgeIndex may have a path open at a time.
    `purge` rewrites the shard through `path/shard-new/` and `path/shard-old/`, which a
    start finishes or drops if a stop cut it off.
    """

    def __init__(self, path: Path) -> None:
        self._shard_path = path / "shard"
        self._new_path = path / "shard-new"
        self._old_path = path / "shard-old"
        self._meta_path = path / "index.json"
        self._shard: qe.EdgeShard | None = None
        self._finish_purge()
        if self._stored() is not None:
            self._shard = qe.EdgeShard.load(str(self._shard_path))

    @property
    def _open(self) -> bool:
        return self._shard is not None

    def _stored(self) -> IndexSpec | None:
        if not (self._meta_path.is_file() and self._shard_path.is_dir()):
            return None
        data = self._meta()
        return IndexSpec(dim=data["dim"], model_id=data["model_id"])

    def _live(self) -> qe.EdgeShard:
        if self._shard is None:
            raise RuntimeError(NOT_CREATED)
        return self._shard

    def _create(self, spec: IndexSpec) -> None:
        self._drop()  # a shard without index.json is left over from a crash
        self._shard = _new_shard(self._shard_path, spec.dim)
        # Written last: index.json marks a complete shard.
        self._write_meta(asdict(spec))

    def _write_meta(self, data: dict[str, Any]) -> None:
        tmp = self._meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self._meta_path)  # atomically

    def _meta(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self._meta_path.read_text(encoding="utf-8"))
        return data

    def _drop(self) -> None:
        self.close()
        self._meta_path.unlink(missing_ok=True)
        for path in (self._shard_path, self._new_path, self._old_path):
            if path.exists():
                shutil.rmtree(path)

    def purge(self) -> None:
        """Leave nothing of deleted points in the index's files. Qdrant only marks a
        deleted point: its payload (the item's text) and vectors stay in the segment's
        pages, and the upsert that wrote them in the write-ahead log, whose 32 MB files
        are reused rather than cut (an optimize's vacuum rewrites the segments but not the
        log). So the points still live are copied into a new shard, which replaces the old
        one, and the old one's files are deleted. It blocks: about a second per 20,000
        points (forgetting a person is rare; every index call runs on the event loop, so
        none sees the swap half done). The copy's points wait, unindexed, for the next
        start's `optimize_at` (the search graph is rebuilt there, not on a serving hub)."""
        if self._shard is None:
            return
        dim = int(self._meta()["dim"])
        if self._new_path.exists():
            shutil.rmtree(self._new_path)  # a purge a stop cut off
        fresh = _new_shard(self._new_path, dim)
        try:
            offset: PointId | None = None
            while True:
                request = qe.ScrollRequest(
                    offset=offset, limit=1000, with_payload=True, with_vector=True
                )
                records, offset = self._shard.scroll(request)
                points = [qe.Point(r.id, r.vector or {}, r.payload) for r in records]
                if points:
                    fresh.update(qe.UpdateOperation.upsert_points(points))
                if offset is None:
                    break
            fresh.flush()
        finally:
            fresh.close()
        self.close()
        self._shard_path.rename(self._old_path)
        self._new_path.rename(self._shard_path)
        self._write_meta({**self._meta(), "graphed": 0})
        shutil.rmtree(self._old_path)
        self._shard = qe.EdgeShard.load(str(self._shard_path))

    def _finish_purge(self) -> None:
        """What a purge cut off by a stop left: a complete copy is taken (the old shard
        renamed away means the copy was done), a partial one dropped; the old shard goes."""
        if not self._shard_path.exists() and self._new_path.exists():
            self._new_path.rename(self._shard_path)
        for path in (self._new_path, self._old_path):
            if path.exists():
                shutil.rmtree(path)

    def _search(
        self, lookups: list[Lookup], limit: int, candidates: int, boost: Boost | None
    ) -> list[Hit]:
        each = [
            qe.Prefetch(candidates, _edge_nearest(x.vector), filter=_edge_filter(x.flt))
            for x in lookups
        ]
        fusion = qe.Fusion.Rrf(k=RRF_K, weights=fusion_weights(lookups))
        if boost is not None:
            stage = each[0]
            if len(each) > 1:
                stage = qe.Prefetch(candidates, fusion, each)  # type: ignore[arg-type]  # stubs
            request = qe.QueryRequest(
                limit=limit, prefetches=[stage], query=_edge_formula(boost), with_payload=True
            )
        elif len(lookups) == 1:
            query, where = _edge_nearest(lookups[0].vector), _edge_filter(lookups[0].flt)
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

    def payloads(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The payloads of those of `ids` the index holds."""
        if self._shard is None or not ids:
            return {}
        found = self._shard.retrieve(list(ids), True, False)
        return {str(p.id): dict(p.payload or {}) for p in found}

    def optimize(self) -> None:
        """Build the HNSW index over what was appended (dense queries stop scanning).

        Blocking and GIL-holding (~28-33 s at 100,000 points): for `animahub repair-rag`
        and a start before it serves (`MemoryService._optimize_if_behind`), never on a
        serving hub's event loop or its threads."""
        if self._shard is not None:
            self._shard.optimize()
            self._write_meta({**self._meta(), "graphed": self._points()})

    def unindexed(self) -> int:
        """About how many points dense search scans one by one: those added since the
        search graph was last built, by the count index.json keeps. (The shard's own
        `indexed_vectors_count` counts sparse vectors too, so it cannot tell.)"""
        if self._shard is None:
            return 0
        return max(0, self._points() - int(self._meta().get("graphed", 0)))

    def _points(self) -> int:
        return int(self._live().info().points_count)

    def close(self) -> None:
        if self._shard is not None:
            self._shard.close()
            self._shard = None
