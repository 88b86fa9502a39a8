"""MemoryService rules that need no real model: rebuild on a model change, idempotent
recording. The embedder here is a deterministic stand-in for the Embedder protocol."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from hub.memory.context import PASSAGE_FORMAT
from hub.memory.index import MemoryFilter
from hub.memory.index_edge import EdgeIndex
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
