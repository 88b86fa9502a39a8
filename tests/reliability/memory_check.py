"""After a run, with the hub stopped: every memory file parses, the index holds exactly the
items the markdown holds (same ids, same text), and every answered turn is in its Anima's
episodes. Read with the hub's own readers (hub/memory/documents.py) and Qdrant Edge's own
API on the index directory the hub wrote."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import qdrant_edge as qe

from hub.markdown_files import read_document
from hub.memory.documents import iter_items, stable_id
from hub.memory.reconcile import PAYLOAD_TEXT


@dataclass
class MemoryVerdict:
    files: int = 0
    items: int = 0
    points: int = 0
    unparsable: list[str] = field(default_factory=list)
    not_indexed: list[str] = field(default_factory=list)  # markdown items not in the index
    stale: list[str] = field(default_factory=list)  # points no markdown item has
    different: list[str] = field(default_factory=list)  # point text is not the item's
    turns_missing: list[str] = field(default_factory=list)  # answered, not in episodes

    def problems(self) -> dict[str, list[str]]:
        found = {
            "unparsable": self.unparsable,
            "not_indexed": self.not_indexed,
            "stale": self.stale,
            "different": self.different,
            "turns_missing": self.turns_missing,
        }
        return {name: items for name, items in found.items() if items}


def check_memory(home: Path) -> MemoryVerdict:
    verdict = MemoryVerdict()
    for path in sorted([*home.glob("animas/*/**/*.md"), *home.glob("shared/**/*.md")]):
        verdict.files += 1
        try:
            read_document(path)
        except (ValueError, UnicodeDecodeError) as exc:  # yaml errors are ValueErrors
            verdict.unparsable.append(f"{path.relative_to(home)}: {exc}")
    items = {}
    for folder in sorted(home.glob("animas/*")):
        try:
            found = iter_items(folder)
        except (ValueError, UnicodeDecodeError) as exc:
            verdict.unparsable.append(f"{folder.name}: {exc}")
            continue
        items.update({item.id: (folder.name, item) for item in found})
    verdict.items = len(items)
    points = _points(home / "index" / "shard")
    verdict.points = len(points)
    for item_id, (anima, item) in items.items():
        point = points.get(item_id)
        if point is None:
            verdict.not_indexed.append(f"{anima}/{item.path} {item_id}")
        elif point.get("text") != item.text[:PAYLOAD_TEXT] or point.get("anima") != anima:
            verdict.different.append(f"{anima}/{item.path} {item_id}")
    verdict.stale.extend(sorted(set(points) - set(items)))
    episodes = {item_id for item_id, (_, item) in items.items() if item.path.startswith("episodes")}
    for inbox_id, anima in _answered(home / "hub.db"):
        if stable_id("turn", inbox_id) not in episodes:
            verdict.turns_missing.append(f"{anima}: inbox {inbox_id}")
    return verdict


def _points(shard: Path) -> dict[str, dict[str, object]]:
    """Every point of the index with its payload."""
    found: dict[str, dict[str, object]] = {}
    if not shard.is_dir():
        return found
    index = qe.EdgeShard.load(str(shard))
    try:
        offset = None
        while True:
            records, offset = index.scroll(
                qe.ScrollRequest(offset=offset, limit=1000, with_payload=True)
            )
            found.update({str(r.id): dict(r.payload or {}) for r in records})
            if offset is None:
                return found
    finally:
        index.close()


def _answered(database: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(database) as conn:
        query = "SELECT id, anima FROM inbox WHERE status = 'done' AND anima IS NOT NULL"
        rows = conn.execute(query)
        return [(str(row[0]), str(row[1])) for row in rows]
