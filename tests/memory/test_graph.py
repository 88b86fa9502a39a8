"""Wikilink neighbours, two hops at most, ranked by personalized PageRank."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hub.memory.documents import Layer, MemoryItem, stable_id, write_item
from hub.memory.graph import KnowledgeGraph, links_of
from hub.memory.slugs import slug

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def note(name: str, text: str, scope: str = "shared", links: list[str] | None = None) -> MemoryItem:
    path = f"knowledge/{name}.md"
    return MemoryItem(
        stable_id(path),
        Layer.SEMANTIC,
        text,
        path,
        scope,
        T0,
        T0,
        links=links or [],
        title=name.replace("-", " ").title(),
    )


def test_wikilinks_parse_aliases_headings_and_front_matter_links() -> None:
    item = note(
        "a",
        "See [[Release Checklist]], [[deploys|how we deploy]] and [[b#setup]].",
        links=["Incident Runbook"],
    )
    assert links_of(item) == {"release-checklist", "deploys", "b", "incident-runbook"}
    assert slug("  Ünïcode Note 日本語 ") == "ünïcode-note-日本語"


def test_neighbours_rank_shared_links_higher_and_stop_at_two_hops() -> None:
    graph = KnowledgeGraph(
        [
            note("seed-one", "[[hub]] [[only-one]]"),
            note("seed-two", "[[hub]]"),
            note("hub", "[[two-hops]]"),
            note("only-one", "leaf"),
            note("two-hops", "[[three-hops]]"),
            note("three-hops", "far away"),
            note("island", "unlinked"),
        ]
    )
    found = graph.neighbours(["knowledge/seed-one.md", "knowledge/seed-two.md"], None)
    names = [item.path.removeprefix("knowledge/").removesuffix(".md") for item, _ in found]
    assert names[0] == "hub"  # linked from both seeds
    assert set(names) == {"hub", "only-one", "two-hops"}
    assert "three-hops" not in names and "island" not in names
    ranks = dict((item.path, rank) for item, rank in found)
    assert ranks["knowledge/hub.md"] > ranks["knowledge/only-one.md"]


def test_neighbours_respect_privacy_scopes() -> None:
    graph = KnowledgeGraph(
        [
            note("seed", "[[alice-salary]] [[team-handbook]]"),
            note("alice-salary", "private", scope="person:alice"),
            note("team-handbook", "public"),
        ]
    )
    seen_by_bob = graph.neighbours(["knowledge/seed.md"], ("shared", "person:bob"))
    assert [i.path for i, _ in seen_by_bob] == ["knowledge/team-handbook.md"]
    seen_by_alice = graph.neighbours(["knowledge/seed.md"], ("shared", "person:alice"))
    assert {i.path for i, _ in seen_by_alice} == {
        "knowledge/team-handbook.md",
        "knowledge/alice-salary.md",
    }
    assert graph.neighbours(["knowledge/unknown.md"], None) == []


def test_graph_loads_from_markdown_and_matches_titles(tmp_path: Path) -> None:
    write_item(tmp_path, note("release-checklist", "1. tag 2. ship"))
    write_item(tmp_path, note("deploys", "Follow the [[Release Checklist]]."))
    graph = KnowledgeGraph.load(tmp_path)
    found = graph.neighbours(["knowledge/deploys.md"], None)
    assert [i.path for i, _ in found] == ["knowledge/release-checklist.md"]
