"""The vector index: one suite run against Qdrant Edge and qdrant-client's local mode."""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from hub.memory.index import (
    DENSE_WEIGHT,
    Boost,
    IndexPoint,
    IndexUnavailable,
    Lookup,
    MemoryFilter,
    SearchMode,
    SparseVec,
    VectorIndex,
    fusion_weights,
)
from hub.memory.index_edge import EdgeIndex
from hub.memory.index_open import open_index
from hub.memory.index_server import ServerIndex

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

DIM = 8
MODEL = "test-model-v1"
ARIA = MemoryFilter(anima="aria")
BOOST_NOW = Boost(now=1_000.0, half_life_s=86_400.0, recency_weight=0.15, importance_weight=0.3)


def vec(*weights: tuple[int, float]) -> list[float]:
    """A DIM-dimensional dense vector with the given (axis, weight) entries."""
    out = [0.0] * DIM
    for axis, weight in weights:
        out[axis] = weight
    return out


def axis(i: int) -> list[float]:
    return vec((i, 1.0))


def sparse(*indices: int) -> SparseVec:
    return SparseVec(list(indices), [1.0] * len(indices))


NO_TERMS = SparseVec([], [])


def point(dense: list[float], terms: SparseVec = NO_TERMS, **payload: Any) -> IndexPoint:
    base: dict[str, Any] = {
        "anima": "aria",
        "layer": "episodic",
        "scope": "shared",
        "ts": 1_000.0,
        "importance": 0.5,
    }
    return IndexPoint(str(uuid.uuid4()), dense, terms, base | payload)


def ids(hits: list[Any]) -> list[str]:
    return [h.id for h in hits]


def make(kind: str, path: Path) -> VectorIndex:
    if kind == "edge":
        return EdgeIndex(path)
    return ServerIndex(QdrantClient(":memory:"), "memory")


@pytest.fixture(params=["edge", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    """An index whose ensure() has not been called yet."""
    index = make(request.param, tmp_path / "index")
    yield index
    index.close()


@pytest.fixture
def index(backend: VectorIndex) -> VectorIndex:
    assert backend.ensure(DIM, MODEL)
    return backend


def test_ensure_is_idempotent_and_reports_a_model_or_dim_change(backend: VectorIndex) -> None:
    assert backend.count() == 0
    assert backend.query(axis(0), None, ARIA, 5) == []
    with pytest.raises(RuntimeError):
        backend.upsert([point(axis(0))])

    assert backend.ensure(DIM, MODEL)
    backend.upsert([point(axis(0))])
    assert backend.ensure(DIM, MODEL)
    assert backend.count() == 1  # a repeated ensure keeps the data
    assert not backend.ensure(16, MODEL)
    assert not backend.ensure(DIM, "another-model")
    assert backend.ensure(DIM, MODEL)
    assert backend.count() == 1


def test_query_finds_the_nearest_point(index: VectorIndex) -> None:
    near, mid, far = point(vec((0, 1.0))), point(vec((0, 1.0), (1, 1.0))), point(axis(5))
    index.upsert([far, near, mid])
    query = vec((0, 1.0), (1, 0.1))
    hits = index.query(query, None, ARIA, 3, SearchMode.DENSE)
    assert ids(hits) == [near.id, mid.id, far.id]
    assert hits[0].score == pytest.approx(0.995, abs=0.01)  # cosine
    assert ids(index.query(query, None, ARIA, 1))[0] == near.id  # hybrid with dense alone


def test_anima_filter_isolates_two_animas(index: VectorIndex) -> None:
    aria = point(axis(0), sparse(1), anima="aria")
    kai = point(axis(0), sparse(1), anima="kai")
    index.upsert([aria, kai])
    for mode in SearchMode:
        assert ids(index.query(axis(0), sparse(1), ARIA, 10, mode)) == [aria.id]
        assert ids(index.query(axis(0), sparse(1), MemoryFilter("kai"), 10, mode)) == [kai.id]
    assert index.count(MemoryFilter("nobody")) == 0


def test_scope_filter_never_returns_another_persons_memory(index: VectorIndex) -> None:
    bob = point(axis(0), sparse(1, 2), scope="person:bob")  # the best match for the query
    alice = point(vec((0, 1.0), (1, 1.0)), sparse(1), scope="person:alice")
    shared = point(vec((0, 1.0), (2, 2.0)), sparse(2, 3), scope="shared")
    channel = point(vec((0, 1.0), (3, 0.5)), sparse(1), scope="channel:web:local/general")
    index.upsert([bob, alice, shared, channel])
    for mode in SearchMode:  # unfiltered, bob's memory ranks first
        assert ids(index.query(axis(0), sparse(1, 2), ARIA, 1, mode)) == [bob.id]
    flt = MemoryFilter("aria", scopes=("shared", "person:alice"))
    for mode in SearchMode:
        found = ids(index.query(axis(0), sparse(1, 2), flt, 10, mode))
        assert set(found) == {alice.id, shared.id}
    assert index.count(flt) == 2


def test_layers_filter(index: VectorIndex) -> None:
    episodic = point(axis(0), layer="episodic")
    semantic = point(axis(0), layer="semantic")
    procedural = point(axis(0), layer="procedural")
    index.upsert([episodic, semantic, procedural])
    flt = MemoryFilter("aria", layers=("semantic", "procedural"))
    assert set(ids(index.query(axis(0), None, flt, 10))) == {semantic.id, procedural.id}
    only = MemoryFilter("aria", layers=("episodic",))
    assert ids(index.query(axis(0), None, only, 10)) == [episodic.id]


def test_time_range_filter_is_inclusive(index: VectorIndex) -> None:
    early, middle, late = (point(axis(0), ts=ts) for ts in (100.0, 200.0, 300.0))
    index.upsert([early, middle, late])

    def found(since: float | None = None, until: float | None = None) -> set[str]:
        flt = MemoryFilter("aria", since=since, until=until)
        return set(ids(index.query(axis(0), None, flt, 10)))

    assert found(since=200.0, until=300.0) == {middle.id, late.id}
    assert found(since=150.0) == {middle.id, late.id}
    assert found(until=200.0) == {early.id, middle.id}
    assert found(since=201.0, until=299.0) == set()


def test_min_importance_filter(index: VectorIndex) -> None:
    low, mid, high = (point(axis(0), importance=i) for i in (0.2, 0.5, 0.9))
    index.upsert([low, mid, high])
    flt = MemoryFilter("aria", min_importance=0.5)
    assert set(ids(index.query(axis(0), None, flt, 10))) == {mid.id, high.id}
    assert index.count(flt) == 2


def test_lexical_dense_and_hybrid_retrievers(index: VectorIndex) -> None:
    # `word` shares only a term with the query; `meaning` shares only the direction.
    word = point(axis(7), sparse(42))
    meaning = point(axis(0), sparse(7))
    index.upsert([word, meaning])
    query_dense, query_terms = axis(0), sparse(42)
    lexical = index.query(query_dense, query_terms, ARIA, 10, SearchMode.LEXICAL)
    assert ids(lexical) == [word.id]
    dense = index.query(query_dense, query_terms, ARIA, 10, SearchMode.DENSE)
    assert ids(dense)[0] == meaning.id
    assert dense[0].score > dense[1].score
    hybrid = index.query(query_dense, query_terms, ARIA, 2, SearchMode.HYBRID)
    assert set(ids(hybrid)) == {word.id, meaning.id}


def test_modes_need_their_query_vector(index: VectorIndex) -> None:
    with pytest.raises(ValueError):
        index.query(None, sparse(1), ARIA, 5, SearchMode.DENSE)
    with pytest.raises(ValueError):
        index.query(axis(0), None, ARIA, 5, SearchMode.LEXICAL)
    assert index.query(None, None, ARIA, 5) == []


def test_rrf_ranks_a_point_good_in_both_above_points_good_in_one(index: VectorIndex) -> None:
    dense_only = point(axis(0))  # first by dense, no shared term
    both = point(vec((0, 1.0), (1, 1.0)), sparse(5))  # second by dense and by lexical
    lexical_only = point(axis(3), sparse(5, 6))  # first by lexical, no dense similarity
    index.upsert([dense_only, both, lexical_only])
    query_dense, query_terms = axis(0), sparse(5, 6)
    assert ids(index.query(query_dense, None, ARIA, 1, SearchMode.DENSE)) == [dense_only.id]
    assert ids(index.query(None, query_terms, ARIA, 1, SearchMode.LEXICAL)) == [lexical_only.id]
    hits = index.query(query_dense, query_terms, ARIA, 3, candidates=2)
    assert ids(hits)[0] == both.id
    assert set(ids(hits)) == {both.id, dense_only.id, lexical_only.id}
    assert hits[0].score > hits[1].score


def test_hybrid_fusion_gives_dense_ranks_more_weight_than_lexical(index: VectorIndex) -> None:
    # `meaning` is 4th by dense and no lexical match; `word` is 3rd by lexical and not among
    # dense's candidates. Plain RRF puts `word` first (1/8 against 1/7); dense ranks divided by
    # DENSE_WEIGHT (1.5) count 4th as 2.7th, which puts `meaning` first.
    near = [point(vec((0, 1.0), (1, 0.1 * n))) for n in range(3)]
    meaning = point(vec((0, 1.0), (1, 0.5)))
    matches = [point(axis(3), SparseVec([5], [w])) for w in (3.0, 2.0)]
    word = point(axis(4), sparse(5))
    index.upsert([*near, meaning, *matches, word])
    assert DENSE_WEIGHT == 1.5
    assert ids(index.query(axis(0), None, ARIA, 4, SearchMode.DENSE))[3] == meaning.id
    assert ids(index.query(None, sparse(5), ARIA, 4, SearchMode.LEXICAL))[2] == word.id
    order = ids(index.query(axis(0), sparse(5), ARIA, 10, candidates=4))
    assert order.index(meaning.id) < order.index(word.id)
    # Lists of one kind (dense alone, with the people retriever) fuse as plain RRF.
    assert fusion_weights([Lookup(axis(0), ARIA), Lookup(axis(0), ARIA)]) is None


def test_a_named_persons_own_words_join_the_fusion(index: VectorIndex) -> None:
    # Others mention the topic more closely; what Dana said herself ranks 4th by each retriever.
    strong = SparseVec([5], [2.0])
    others = [point(vec((0, 1.0), (1, 0.1 * n)), strong, person="bob") for n in range(3)]
    dana = point(vec((0, 1.0), (1, 0.5)), sparse(5), person="dana")
    index.upsert([*others, dana])
    assert dana.id not in ids(index.query(axis(0), sparse(5), ARIA, 2, candidates=3))
    for mode in SearchMode:
        found = ids(index.query(axis(0), sparse(5), ARIA, 2, mode, candidates=3, people=("dana",)))
        assert dana.id in found, mode
    boosted = index.query(
        axis(0), sparse(5), ARIA, 2, candidates=3, people=("dana",), boost=BOOST_NOW
    )
    assert dana.id in ids(boosted)


def test_the_people_retriever_searches_their_words_without_their_names(
    index: VectorIndex,
) -> None:
    # Term 9 is Dana's name: every line of hers carries it in its label, so within her words
    # it ranks by how often she is named, not by the topic (term 5), which others talk about.
    others = [point(axis(0), sparse(5), person="bob") for _ in range(10)]
    named = point(axis(0), SparseVec([9], [3.0]), person="dana")
    topic = point(axis(0), SparseVec([5, 9], [1.0, 0.5]), person="dana")
    index.upsert([*others, named, topic])
    terms, own = SparseVec([5, 9], [1.0, 1.0]), sparse(5)
    people = ("dana",)
    assert ids(index.query(None, terms, ARIA, 2, SearchMode.LEXICAL, people=people))[0] == named.id
    found = index.query(None, terms, ARIA, 2, SearchMode.LEXICAL, people=people, own_terms=own)
    assert ids(found)[0] == topic.id


def test_the_people_retriever_keeps_the_scope_filter(index: VectorIndex) -> None:
    private = point(axis(0), sparse(5), person="dana", scope="person:dana")
    shared = point(axis(3), sparse(6), person="bob")
    index.upsert([private, shared])
    flt = MemoryFilter("aria", scopes=("shared",))
    found = ids(index.query(axis(0), sparse(5), flt, 5, people=("dana",)))
    assert private.id not in found


def test_what_was_said_within_a_named_span_joins_the_fusion(index: VectorIndex) -> None:
    # Others match more closely; the one said within the span ranks 4th by each retriever.
    strong = SparseVec([5], [2.0])
    others = [point(vec((0, 1.0), (1, 0.1 * n)), strong, ts=500.0 + n) for n in range(3)]
    that_day = point(vec((0, 1.0), (1, 0.5)), sparse(5), ts=2_000.0)
    index.upsert([*others, that_day])
    assert that_day.id not in ids(index.query(axis(0), sparse(5), ARIA, 2, candidates=3))
    for mode in SearchMode:
        found = ids(index.query(axis(0), sparse(5), ARIA, 2, mode, candidates=3, span=(2e3, 3e3)))
        assert that_day.id in found, mode
    # The span ends before 2,000: nothing of it is within; and the filter's own range holds.
    assert that_day.id not in ids(index.query(axis(0), sparse(5), ARIA, 2, span=(1e3, 2e3)))
    narrow = MemoryFilter("aria", until=1_000.0)
    assert that_day.id not in ids(index.query(axis(0), sparse(5), narrow, 2, span=(2e3, 3e3)))


def test_delete_removes_points(index: VectorIndex) -> None:
    keep, gone = point(axis(0)), point(axis(0))
    index.upsert([keep, gone])
    index.delete([gone.id])
    index.delete([])
    index.delete([str(uuid.uuid4())])  # an unknown id is not an error
    assert index.count() == 1
    assert ids(index.query(axis(0), None, ARIA, 10)) == [keep.id]


def test_delete_where_removes_only_the_matching_points(index: VectorIndex) -> None:
    aria_shared, aria_bob = point(axis(0)), point(axis(0), scope="person:bob")
    kai = point(axis(0), anima="kai")
    index.upsert([aria_shared, aria_bob, kai])
    index.delete_where(MemoryFilter("aria", scopes=("person:bob",)))
    assert ids(index.query(axis(0), None, ARIA, 10)) == [aria_shared.id]
    index.delete_where(ARIA)
    assert index.count(ARIA) == 0
    assert ids(index.query(axis(0), None, MemoryFilter("kai"), 10)) == [kai.id]


def test_count_with_and_without_filter(index: VectorIndex) -> None:
    index.upsert([point(axis(i % DIM), anima="aria", layer="semantic") for i in range(5)])
    index.upsert([point(axis(i % DIM), anima="kai") for i in range(3)])
    assert index.count() == 8
    assert index.count(ARIA) == 5
    assert index.count(MemoryFilter("kai")) == 3
    assert index.count(MemoryFilter("aria", layers=("semantic",))) == 5
    assert index.count(MemoryFilter("kai", layers=("semantic",))) == 0


def test_clear_then_reuse(index: VectorIndex) -> None:
    index.upsert([point(axis(0)), point(axis(1))])
    index.clear()
    assert index.count() == 0
    assert index.query(axis(0), None, ARIA, 5) == []
    fresh = point(axis(2), sparse(9))
    index.upsert([fresh])  # clear() leaves an empty, working index
    assert ids(index.query(axis(2), sparse(9), ARIA, 5)) == [fresh.id]
    assert index.ensure(DIM, MODEL)


def test_rebuild_after_a_model_change(index: VectorIndex) -> None:
    index.upsert([point(axis(0))])
    assert not index.ensure(16, "model-v2")
    index.clear()  # recreates with the settings the last ensure() asked for
    assert index.ensure(16, "model-v2")
    assert index.count() == 0
    wide = point([0.0] * 15 + [1.0])
    index.upsert([wide])
    assert ids(index.query([0.0] * 15 + [1.0], None, ARIA, 5)) == [wide.id]


def test_upsert_of_an_existing_id_replaces_the_point(index: VectorIndex) -> None:
    old = point(axis(0), sparse(1), note="old", extra=True)
    index.upsert([old])
    new = IndexPoint(old.id, axis(4), sparse(2), {"anima": "aria", "note": "new"})
    index.upsert([new])
    assert index.count() == 1
    hits = index.query(axis(4), None, ARIA, 5)
    assert ids(hits) == [new.id]
    assert hits[0].payload == new.payload
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert index.query(None, sparse(1), ARIA, 5, SearchMode.LEXICAL) == []


def test_payload_round_trips(index: VectorIndex) -> None:
    payload = {
        "anima": "aria",
        "scope": "person:alice",
        "ts": 1_717_000_000.25,
        "importance": 0.75,
        "text": "Alice prefers tea — 紅茶",
        "tags": ["tea", "preference"],
        "flags": [True, False],
        "count": 3,
        "source": {"file": "knowledge/tea.md", "lines": [1, 4], "meta": {"v": 1.5}},
    }
    stored = IndexPoint(str(uuid.uuid4()), axis(0), sparse(3), payload)
    index.upsert([stored])
    [hit] = index.query(axis(0), sparse(3), ARIA, 5)
    assert hit.id == stored.id
    assert hit.payload == payload


def test_filtered_hybrid_query_at_5000_points(index: VectorIndex) -> None:
    rng = random.Random(7)
    animas, scopes = ("aria", "kai"), ("shared", "person:alice", "person:bob", "channel:x")
    points = [
        point(
            [rng.gauss(0, 1) for _ in range(DIM)],
            SparseVec(sorted(rng.sample(range(200), 5)), [rng.random() for _ in range(5)]),
            anima=rng.choice(animas),
            scope=rng.choice(scopes),
            importance=rng.random(),
        )
        for _ in range(5_000)
    ]
    index.upsert(points)
    assert index.count() == 5_000
    flt = MemoryFilter("aria", scopes=("shared", "person:alice"), min_importance=0.3)
    query_terms = SparseVec(list(range(0, 200, 4)), [1.0] * 50)
    started = time.perf_counter()
    hits = index.query([rng.gauss(0, 1) for _ in range(DIM)], query_terms, flt, 20)
    elapsed = time.perf_counter() - started
    print(f"{type(index).__name__}: filtered hybrid query at 5,000 points: {elapsed * 1e3:.1f} ms")
    assert len(hits) == 20
    assert len(set(ids(hits))) == 20
    for hit in hits:
        assert hit.payload["anima"] == "aria"
        assert hit.payload["scope"] in ("shared", "person:alice")
        assert hit.payload["importance"] >= 0.3


def test_edge_data_and_settings_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "index"
    first = EdgeIndex(path)
    assert first.ensure(DIM, MODEL)
    kept = point(axis(1), sparse(4), text="remember me", tags=["a"])
    first.upsert([kept, point(axis(2))])
    first.close()

    assert json.loads((path / "index.json").read_text()) == {"dim": DIM, "model_id": MODEL}
    second = EdgeIndex(path)
    try:
        assert second.count() == 2  # readable before ensure()
        [hit] = second.query(axis(1), sparse(4), ARIA, 1)
        assert (hit.id, hit.payload) == (kept.id, kept.payload)
        assert not second.ensure(DIM, "another-model")
        assert not second.ensure(32, MODEL)
        assert second.ensure(DIM, MODEL)
        assert second.count(MemoryFilter("aria", layers=("episodic",))) == 2
    finally:
        second.close()


def test_edge_clear_survives_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "index"
    first = EdgeIndex(path)
    assert first.ensure(DIM, MODEL)
    first.upsert([point(axis(0))])
    first.clear()
    first.upsert([point(axis(3))])
    first.close()
    second = EdgeIndex(path)
    try:
        assert second.count() == 1
        assert second.ensure(DIM, MODEL)
    finally:
        second.close()


def test_open_index_chooses_the_backend(tmp_path: Path) -> None:
    edge = open_index(tmp_path / "edge", None)
    assert isinstance(edge, EdgeIndex)
    edge.close()
    server = open_index(tmp_path / "ignored", ":memory:")
    assert isinstance(server, ServerIndex)
    assert server.ensure(DIM, MODEL)
    server.close()
    with pytest.raises(ValueError):
        open_index(None, None)


def test_optimize_keeps_every_point_searchable(index: VectorIndex) -> None:
    points = [point(axis(i % DIM), sparse(i)) for i in range(40)]
    index.upsert(points)
    index.optimize()
    assert index.count() == 40
    assert points[3].id in ids(index.query(axis(3), sparse(3), ARIA, 5))
    later = point(axis(1), sparse(99))
    index.upsert([later])  # appending after an optimize still works
    assert later.id in ids(index.query(None, sparse(99), ARIA, 5, SearchMode.LEXICAL))


@pytest.mark.parametrize("mode", list(SearchMode))
def test_the_engine_formula_lifts_recent_and_important_items_as_rescore_does(
    index: VectorIndex, mode: SearchMode
) -> None:
    from datetime import UTC, datetime

    from hub.memory.recall import boost_at, rescore

    now = datetime(2026, 3, 2, tzinfo=UTC)
    day = 86_400.0
    # Relevance alone would rank old first; a month-old, unimportant one must fall behind a
    # slightly less relevant item from today, and an important one behind that.
    old = point(vec((0, 1.0)), sparse(1), ts=now.timestamp() - 200 * day, importance=0.0)
    fresh = point(vec((0, 0.96), (1, 0.28)), sparse(1), ts=now.timestamp(), importance=0.0)
    important = point(vec((0, 0.9), (1, 0.44)), sparse(1), ts=now.timestamp(), importance=1.0)
    unrelated = point(axis(5), sparse(9), ts=now.timestamp(), importance=1.0)
    index.upsert([old, fresh, important, unrelated])
    plain = index.query(axis(0), sparse(1), ARIA, 10, mode)
    boosted = index.query(axis(0), sparse(1), ARIA, 10, mode, boost=boost_at(now))
    expected = rescore(plain, now, {})  # the same lifts, computed in Python
    assert ids(boosted) == [r.id for r in expected]
    for hit, want in zip(boosted, expected, strict=True):
        assert hit.score == pytest.approx(want.score, rel=1e-4)
    if mode is not SearchMode.LEXICAL:  # lexically the three tie; by vector they do not
        assert ids(plain) != ids(boosted)  # the lift changed the order: the test has teeth


class _FailingQdrant(BaseHTTPRequestHandler):
    """A Qdrant server whose collection exists and whose every other call fails (its disk
    full, say): 500 with Qdrant's error body."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.endswith("/exists"):
            status, body = 200, {"result": {"exists": True}, "status": "ok", "time": 0}
        else:
            status, body = 500, {"status": {"error": "No space left on device"}, "time": 0}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, *_args: object) -> None:
        pass


def test_a_failing_qdrant_server_raises_index_unavailable_a_runtime_error() -> None:
    """What memory's callers handle for either engine (recall logs it and the turn goes
    on): not qdrant-client's own exceptions, which escaped them."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FailingQdrant)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        index = ServerIndex(QdrantClient(url=url, check_compatibility=False), "memory")
        calls: list[Callable[[], object]] = [
            lambda: index.query(vec((1, 1.0)), None, ARIA, 3, SearchMode.DENSE),
            lambda: index.upsert([point(vec((1, 1.0)))]),
            lambda: index.count(),
            lambda: index.ensure(DIM, MODEL),
        ]
        for call in calls:
            with pytest.raises(IndexUnavailable, match="No space left on device"):
                call()
        index.close()
    finally:
        server.shutdown()
        server.server_close()
