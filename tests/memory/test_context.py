"""What an episodic item is embedded with: itself, then up to two earlier sections of the
same file, conversation and scope (hub/memory/context.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from hub.memory.context import CONTEXT_SECTIONS, passage_text, previous_id
from hub.memory.documents import Layer, MemoryItem, stable_id
from hub.memory.index import SearchMode
from hub.memory.index_edge import EdgeIndex
from hub.memory.recall import RecallScope
from hub.memory.service import MemoryService, TurnRecord
from hub.settings import MemorySection

AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PATH = "episodes/2026-03-02.md"


def item(n: int, text: str, scope: str = "channel:c1", channel: str = "c1") -> MemoryItem:
    return MemoryItem(
        id=f"i{n}",
        layer=Layer.EPISODIC,
        text=text,
        path=PATH,
        scope=scope,
        created=AT,
        updated=AT,
        channel=channel,
    )


def test_a_turn_is_embedded_with_the_two_sections_before_it_nearest_first() -> None:
    file = [item(1, "one"), item(2, "two"), item(3, "three"), item(4, "four")]
    assert CONTEXT_SECTIONS == 2
    assert passage_text(file[3], lambda _path: file, 1000) == "four\nthree\ntwo"
    assert passage_text(file[0], lambda _path: file, 1000) == "one"


def test_context_never_crosses_a_conversation_or_a_privacy_scope() -> None:
    file = [
        item(1, "channel before"),
        item(2, "alice's DM secret", scope="person:alice", channel="dm-alice"),
        item(3, "another channel", scope="channel:c2", channel="c2"),
        item(4, "channel now"),
    ]
    text = passage_text(file[3], lambda _path: file, 1000)
    assert text == "channel now\nchannel before"


def test_the_section_itself_survives_the_length_limit() -> None:
    file = [item(1, "x" * 5000), item(2, "the answer")]
    assert passage_text(file[1], lambda _path: file, 100).startswith("the answer\n")
    assert len(passage_text(file[1], lambda _path: file, 100)) == 100


def test_notes_are_embedded_alone() -> None:
    note = MemoryItem(
        id="k1",
        layer=Layer.SEMANTIC,
        text="a fact",
        path="knowledge/a.md",
        scope="shared",
        created=AT,
        updated=AT,
    )
    assert passage_text(note, lambda _path: [item(1, "other")], 1000) == "a fact"


class Recorder:
    model_id, dim = "rec", 4

    def __init__(self) -> None:
        self.passages: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.passages.extend(texts)
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]


def in_general(n: int, text: str, person: str = "Alice") -> TurnRecord:
    """Alice's (or `person`'s) n-th turn in #general, n minutes after AT."""
    return TurnRecord(
        anima="aria",
        inbox_id=f"in-{n}",
        person_id=person.lower(),
        person_name=person,
        where="#general on web",
        channel_key="web:local/general",
        scope="channel:web:local/general",
        user_text=text,
        reply="ok",
        at=AT.replace(minute=n),
    )


async def test_a_recorded_turn_is_indexed_with_the_earlier_turns_of_its_conversation(
    tmp_path: Path,
) -> None:
    embedder = Recorder()
    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), embedder)
    await service.start(["aria"])
    try:
        for n, text in enumerate(["Did you go to the support group?", "Yes, last Saturday!"]):
            service.record_turn(in_general(n, text))
            await service.drain()
        last = embedder.passages[-1]
        assert last.startswith("**Alice** (#general on web): Yes, last Saturday!")
        assert "support group" in last
    finally:
        await service.stop()


def test_the_previous_section_is_the_nearest_earlier_one_of_the_conversation() -> None:
    file = [
        item(1, "channel before"),
        item(2, "alice's DM", scope="person:alice", channel="dm-alice"),
        item(3, "channel now"),
    ]
    assert previous_id(file[2], lambda _path: file) == "i1"
    assert previous_id(file[1], lambda _path: file) is None  # nothing earlier in her DM
    assert previous_id(file[0], lambda _path: file) is None


async def test_an_indexed_turn_records_its_previous_section_and_search_lifts_it(
    tmp_path: Path,
) -> None:
    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), Recorder())
    await service.start(["aria"])
    try:
        said = [("Alice", "I went to the support group"), ("Bob", "Yes, last Saturday!")]
        recorded = []
        for n, (person, text) in enumerate(said):
            recorded.append(service.record_turn(in_general(n, text, person)))
            await service.drain()
        first, second = recorded
        payloads = service.index.payloads([first.id, second.id])
        assert payloads[second.id]["prev"] == first.id
        assert payloads[first.id]["prev"] is None
        # Both match "saturday" no better than each other densely (one vector for all); the
        # lexical hit on Bob's reply lifts Alice's line, which no retriever ranks for the word.
        scope = RecallScope("aria", "alice", "web:local/general", is_dm=False)
        found = await service.search(scope, "saturday", limit=2, mode=SearchMode.LEXICAL)
        assert [r.id for r in found] == [second.id, first.id]
    finally:
        await service.stop()


async def test_a_note_is_found_and_shown_by_its_title_too(tmp_path: Path) -> None:
    """The offline distiller files "The release procedure: run tests, tag, push" as steps
    under the title "How to release": indexed as the steps alone, "How do I release?" did not
    find it and it showed as " 1 run tests 2. tag 3. push"."""
    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), Recorder())
    await service.start(["aria"])
    try:
        steps = "1. run tests\n2. tag\n3. push"
        note = MemoryItem(
            id=stable_id("release"),
            layer=Layer.PROCEDURAL,
            text=steps,
            path="procedures/how-to-release.md",
            scope="shared",
            created=AT,
            updated=AT,
            title="How to release",
        )
        titled = replace(note, id=stable_id("tests"), title="Run tests")
        await service.index_items("aria", [note, titled])
        scope = RecallScope.admin("aria")
        found = await service.search(scope, "release", limit=5, mode=SearchMode.LEXICAL)
        assert [(r.id, r.text) for r in found] == [(note.id, f"**How to release**\n{steps}")]
        kept = service.index.payloads([titled.id])[titled.id]
        assert kept["text"] == steps  # its title says nothing its steps do not
    finally:
        await service.stop()
