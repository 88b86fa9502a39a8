"""Markdown memory round-trips: what is written is what a rebuild reads back."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import frontmatter

from hub.memory.documents import (
    Layer,
    MemoryItem,
    append_episode,
    episode_path,
    importance_of,
    iter_items,
    read_episodes,
    read_item,
    rewrite_episodes,
    stable_id,
    write_item,
)

T0 = datetime(2026, 11, 29, 14, 5, tzinfo=UTC)


def episode(section: str, text: str, person: str = "alice") -> MemoryItem:
    return MemoryItem(
        id=stable_id("episodes/2026-11-29.md", section, text),
        layer=Layer.EPISODIC,
        text=text,
        path=episode_path(T0.date()),
        scope=f"person:{person}",
        created=T0,
        updated=T0,
        person=person,
        channel="web:local/dm:aria:" + person,
        importance=importance_of(text, 0.2),
        section=section,
    )


def test_episode_sections_round_trip_in_order(tmp_path: Path) -> None:
    first = episode("14:05", "**Alice:** I like ramen\n**Aria:** Noted!")
    second = episode("14:20", "**Bob:** [IMPORTANT] the deploy key rotates on Friday", "bob")
    append_episode(tmp_path, first)
    append_episode(tmp_path, second)
    path = tmp_path / "episodes" / "2026-11-29.md"
    post = frontmatter.loads(path.read_text())
    assert post["layer"] == "episodic" and str(post["date"]) == "2026-11-29"
    assert "## 14:05" in post.content and "## 14:20" in post.content
    items = read_episodes(tmp_path, path)
    assert [i.section for i in items] == ["14:05", "14:20"]
    assert items[0].text == first.text and items[0].id == first.id
    assert items[0].scope == "person:alice" and items[1].person == "bob"
    assert items[1].importance == 1.0 and items[0].importance == 0.2
    assert items[0].created == T0
    assert "<!-- memory:" not in items[0].text


def test_rewrite_keeps_what_is_given(tmp_path: Path) -> None:
    items = [episode("09:00", "one"), episode("10:00", "two")]
    for item in items:
        append_episode(tmp_path, item)
    rewrite_episodes(tmp_path, items[0].path, items[1:])
    again = read_episodes(tmp_path, tmp_path / items[0].path)
    assert [i.text for i in again] == ["two"]


def test_knowledge_file_round_trips_with_front_matter(tmp_path: Path) -> None:
    item = MemoryItem(
        id=stable_id("knowledge/ramen.md"),
        layer=Layer.SEMANTIC,
        text="Alice likes ramen. See [[alice-preferences]].",
        path="knowledge/ramen.md",
        scope="shared",
        created=T0,
        updated=T0,
        importance=0.5,
        access_count=3,
        last_access=T0,
        links=["alice-preferences"],
        title="Ramen",
    )
    write_item(tmp_path, item)
    meta = frontmatter.loads((tmp_path / "knowledge" / "ramen.md").read_text()).metadata
    for key in (
        "id",
        "layer",
        "created",
        "updated",
        "scope",
        "importance",
        "access_count",
        "last_access",
        "links",
    ):
        assert key in meta
    back = read_item(tmp_path, tmp_path / "knowledge" / "ramen.md")
    assert back == item


def test_hand_written_file_gets_sensible_defaults(tmp_path: Path) -> None:
    (tmp_path / "procedures").mkdir()
    (tmp_path / "procedures" / "deploy-checklist.md").write_text("1. tests\n2. tag\n")
    item = read_item(tmp_path, tmp_path / "procedures" / "deploy-checklist.md")
    assert item.layer is Layer.PROCEDURAL and item.scope == "shared"
    assert item.title == "deploy checklist" and item.text == "1. tests\n2. tag"
    assert item.id == read_item(tmp_path, tmp_path / "procedures" / "deploy-checklist.md").id


def test_iter_items_reads_every_layer(tmp_path: Path) -> None:
    append_episode(tmp_path, episode("08:00", "morning"))
    for folder, text in (("knowledge", "fact"), ("procedures", "how"), ("skills", "skill")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.md").write_text(text)
    layers = sorted(i.layer.value for i in iter_items(tmp_path))
    assert layers == ["episodic", "procedural", "semantic", "skill"]
