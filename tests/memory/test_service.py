"""MemoryService rules that need no real model: rebuild on a model change, idempotent
recording. The embedder here is a deterministic stand-in for the Embedder protocol."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hub.memory.context import PASSAGE_FORMAT
from hub.memory.documents import Layer, MemoryItem, append_episode, episode_path, stable_id
from hub.memory.index import MemoryFilter
from hub.memory.index_edge import EdgeIndex
from hub.memory.recall import RecallScope
from hub.memory.reconcile import MARGIN_S, changed_items, mark_path
from hub.memory.service import MemoryService, TurnRecord
from hub.settings import MemorySection


class HashEmbedder:
    def __init__(self, model_id: str, dim: int = 16) -> None:
        self.model_id = model_id
        self.dim = dim

    def _vec(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        raw = [b - 127.5 for b in digest[: self.dim]]
        norm = sum(v * v for v in raw) ** 0.5
        return [v / norm for v in raw]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]


def turn(inbox_id: str, text: str) -> TurnRecord:
    return TurnRecord(
        anima="aria",
        inbox_id=inbox_id,
        person_id="alice",
        person_name="Alice",
        where="a DM",
        channel_key="web:local/dm:aria:alice",
        scope="person:alice",
        user_text=text,
        reply="ok",
        at=datetime(2026, 11, 29, 9, 30, tzinfo=UTC),
    )


async def open_service(home: Path, model: str, dim: int = 16) -> MemoryService:
    service = MemoryService(
        home, MemorySection(), EdgeIndex(home / "index"), HashEmbedder(model, dim)
    )
    await service.start(["aria"])
    return service


async def test_recording_a_turn_twice_keeps_one_section(tmp_path: Path) -> None:
    service = await open_service(tmp_path, "m1")
    service.record_turn(turn("in-1", "first"))
    service.record_turn(turn("in-1", "first"))  # the same turn, retried after a crash
    await service.stop()
    text = next((tmp_path / "animas/aria/episodes").glob("*.md")).read_text()
    assert text.count("## 09:30") == 1


async def test_a_new_embedding_model_rebuilds_instead_of_mixing(tmp_path: Path) -> None:
    first = await open_service(tmp_path, "model-a", 16)
    for n in range(5):
        first.record_turn(turn(f"in-{n}", f"message number {n}"))
    await first.stop()

    second = await open_service(tmp_path, "model-b", 24)
    try:
        assert second.index.count(MemoryFilter(anima="aria")) == 5
        # The stored spec is the new model's (with how passages are made: hub/memory/context)
        assert second.index.ensure(24, f"model-b+{PASSAGE_FORMAT}")
        assert not second.index.ensure(16, f"model-a+{PASSAGE_FORMAT}")
        assert not second.index.ensure(24, "model-b")  # vectors of another passage format
    finally:
        await second.stop()


async def test_recall_counts_reach_the_episode_sections_markdown(tmp_path: Path) -> None:
    from hub.memory.documents import read_episodes
    from hub.memory.recall import RecallScope

    service = await open_service(tmp_path, "m1")
    try:
        first = service.record_turn(turn("in-1", "the budget code is 7731"))
        service.record_turn(turn("in-2", "lunch is at noon"))
        await service.drain()
        path = service.anima_dir("aria") / first.path
        before = path.read_text(encoding="utf-8")
        scope = RecallScope("aria", "alice", "web:local/dm:aria:alice", True)
        found = await service.search(scope, "budget code 7731", limit=1)
        assert [r.id for r in found] == [first.id]
        service.flush_access()
        sections = {i.id: i for i in read_episodes(service.anima_dir("aria"), path)}
        assert sections[first.id].access_count == 1
        assert sections[first.id].last_access is not None
        assert [i.text for i in sections.values()] == [
            i.text for i in read_episodes(service.anima_dir("aria"), path)
        ]
        assert "the budget code is 7731" in path.read_text(encoding="utf-8")
        assert path.read_text(encoding="utf-8") != before
        assert len(sections) == 2  # the other section is still there, untouched
    finally:
        await service.stop()


async def test_items_a_stop_left_unindexed_are_indexed_at_the_next_start(tmp_path: Path) -> None:
    first = await open_service(tmp_path, "m1")
    kept = first.record_turn(turn("in-1", "indexed before the stop"))
    await first.stop()
    assert mark_path(tmp_path).is_file()
    # What a kill between an episode append and its indexing leaves: the markdown holds
    # the item, the index does not.
    late = replace(kept, id=stable_id("turn", "in-2"), text="appended, never indexed")
    assert append_episode(tmp_path / "animas" / "aria", late)
    second = await open_service(tmp_path, "m1")
    try:
        await second.drain()
        held = second.index.payloads([kept.id, late.id])
        assert set(held) == {kept.id, late.id}
        assert held[late.id]["text"] == "appended, never indexed"
    finally:
        await second.stop()


def test_only_files_changed_since_the_mark_less_a_margin_are_read(tmp_path: Path) -> None:
    folder = tmp_path / "animas" / "aria"
    days = {"2026-11-29": "an old day", "2026-11-30": "a recent day"}
    for day, text in days.items():
        at = datetime.fromisoformat(f"{day}T09:00:00+00:00")
        item = MemoryItem(
            id=stable_id("turn", day),
            layer=Layer.EPISODIC,
            text=text,
            path=episode_path(at.date()),
            scope="person:alice",
            created=at,
            updated=at,
            section="09:00",
        )
        assert append_episode(folder, item)
    mark = 1_000_000_000.0
    for day, offset in (("2026-11-29", -1.0), ("2026-11-30", 1.0)):
        when = mark - MARGIN_S + offset
        os.utime(folder / "episodes" / f"{day}.md", (when, when))
    assert [i.text for i in changed_items(folder, mark)] == ["a recent day"]
    assert [i.text for i in changed_items(folder, None)] == ["an old day", "a recent day"]


class SlowEmbedder(HashEmbedder):
    """Embeds passages at `seconds` a text: a backlog that outlasts a stop's grace."""

    def __init__(self, model_id: str, seconds: float) -> None:
        super().__init__(model_id)
        self.seconds = seconds

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(self.seconds * len(texts))
        return super().embed_passages(texts)


async def test_a_stop_does_not_wait_out_a_backlog_and_start_up_indexes_the_rest(
    tmp_path: Path,
) -> None:
    index = EdgeIndex(tmp_path / "index")
    first = MemoryService(tmp_path, MemorySection(), index, SlowEmbedder("m1", 0.02))
    await first.start(["aria"])
    items = [first.record_turn(turn(f"in-{n}", f"message number {n}")) for n in range(300)]
    assert first.backlog() > 0
    await first.stop(grace_s=0.3)  # 300 items at 0.02 s are 6 s of embedding
    assert first.backlog() == 0
    reopened = EdgeIndex(tmp_path / "index")
    indexed = len(reopened.payloads([i.id for i in items]))
    reopened.close()
    assert 0 < indexed < 300  # stopped after the batch in flight, the rest left
    second = await open_service(tmp_path, "m1")
    try:
        await second.drain()
        assert len(second.index.payloads([i.id for i in items])) == 300
    finally:
        await second.stop()


class WatchedEmbedder(HashEmbedder):
    """Records each query embedding's texts and the thread it ran on."""

    def __init__(self, model_id: str) -> None:
        super().__init__(model_id)
        self.queries: list[tuple[list[str], int]] = []

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.queries.append((list(texts), threading.get_ident()))
        return super().embed_queries(texts)


async def test_start_warms_the_embedder_up_off_the_event_loop(tmp_path: Path) -> None:
    """The first embedding after a start loads the model and starts its threads (bench/
    README.md): start begins it, on a thread of its own, so the first turn's priming does
    not; the hub answers meanwhile (issue 47), so start does not wait for it."""
    embedder = WatchedEmbedder("m1")
    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), embedder)
    await service.start(["aria"])
    try:
        await service.warmed()
        [(texts, thread)] = embedder.queries
        assert len(texts) == 1 and thread != threading.get_ident()  # not on the loop
    finally:
        await service.stop()


async def test_an_embedder_that_cannot_warm_up_leaves_start_working(tmp_path: Path) -> None:
    class Broken(HashEmbedder):
        def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
            raise RuntimeError("no model here")

    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), Broken("m"))
    await service.start(["aria"])  # warned, not raised
    try:
        service.record_turn(turn("in-1", "still recorded and indexed"))
        await service.drain()
        assert service.index.count(MemoryFilter(anima="aria")) == 1
    finally:
        await service.stop()


async def test_a_start_builds_the_search_graph_once_enough_points_wait_outside_it(
    tmp_path: Path,
) -> None:
    """Dense search scans the points not yet in the HNSW graph one by one. A start that
    finds `optimize_at` of them or more builds the graph (before the hub serves); fewer are
    left for a later start. Qdrant only indexes a segment of ~10 MB of vectors or more, so
    this takes 10,000 points of 384 dimensions."""
    import random
    import uuid

    from hub.memory.index import IndexPoint, SparseVec

    async def started(optimize_at: int) -> MemoryService:
        settings = MemorySection(optimize_at=optimize_at)
        index = EdgeIndex(tmp_path / "index")
        service = MemoryService(tmp_path, settings, index, HashEmbedder("m1", 384))
        await service.start([])
        return service

    service = await started(20_000)
    rng = random.Random(3)
    for _ in range(10):
        service.index.upsert(
            [
                IndexPoint(
                    str(uuid.uuid4()),
                    [rng.gauss(0, 1) for _ in range(384)],
                    SparseVec([], []),
                    {"anima": "aria", "layer": "episodic", "scope": "shared"},
                )
                for _ in range(1_000)
            ]
        )
    assert service.index.unindexed() == 10_000
    assert getattr(service.index, "_shard").info().indexed_vectors_count == 0  # noqa: B009
    await service.stop()

    service = await started(20_000)  # fewer than that wait: left as they are
    assert service.index.unindexed() == 10_000
    await service.stop()

    service = await started(5_000)
    try:
        assert service.index.unindexed() == 0 and service.index.count() == 10_000
        # the engine's own count: these points carry a dense vector only, now all graphed
        shard = getattr(service.index, "_shard")  # noqa: B009 - the engine under the index
        assert shard.info().indexed_vectors_count == 10_000
    finally:
        await service.stop()


async def test_the_same_words_said_again_are_recalled_once(tmp_path: Path) -> None:
    from hub.memory.recall import RecallScope

    service = await open_service(tmp_path, "m1")
    try:
        for n in range(3):  # asked three times: three sections of the same words
            service.record_turn(turn(f"ask-{n}", "When is my dentist appointment?"))
        told = service.record_turn(turn("told", "My dentist appointment is on Tuesday at 3pm."))
        await service.drain()
        scope = RecallScope("aria", "alice", "web:local/dm:aria:alice", True)
        found = await service.search(scope, "dentist appointment", limit=5)
        texts = [" ".join(r.text.split()) for r in found]
        assert len(texts) == len(set(texts)) == 2, texts
        assert told.id in {r.id for r in found}
    finally:
        await service.stop()


async def test_priming_keeps_the_most_relevant_recent_lines_in_time_order(tmp_path: Path) -> None:
    """Twelve status notes, then the parking spot: the recent-activity budget holds a few
    lines, and cutting the time-ordered list kept the oldest and dropped the answer."""
    service = await open_service(tmp_path, "m1")
    start = datetime.now(UTC) - timedelta(minutes=40)
    said = [
        f"Status note {n}: the nightly build of module alpha{n} finished in about {n} minutes."
        for n in range(12)
    ]
    said.append("The visitor parking spot is number P14 behind the lobby.")
    for n, text in enumerate(said):
        service.record_turn(replace(turn(f"in-{n}", text), at=start + timedelta(minutes=n)))
    await service.drain()
    scope = RecallScope("aria", "alice", "web:local/dm:aria:alice", is_dm=True)
    priming = await service.prime(scope, "Which visitor parking spot should guests use?")
    await service.stop()
    recent = next(lines for title, lines in priming.sections.items() if title.startswith("Recent"))
    assert 1 < len(recent) < len(said)  # the budget holds some of them
    assert any("P14" in line for line in recent), recent
    assert recent == sorted(recent), recent  # "[HH:MM] …" lines: oldest first
