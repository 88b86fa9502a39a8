"""Bring the index back in line with the markdown after a stop that cut indexing off.

The markdown is written first and indexed after, in the background; a kill in between
leaves items the index lacks (or holds in an older version). The service marks, whenever
no indexing is in flight, the time at which the index matched the markdown
(`<data>/index/synced`). At start, every memory file changed since that mark, less a
margin for a file written just before its indexing began, is read again, and what the
index lacks or holds differently is indexed. No mark (a first start, or an index from
before this existed): every file is checked once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from hub.markdown_files import atomic_write
from hub.memory.context import indexed_text
from hub.memory.documents import LAYER_DIRS, MemoryItem, items_in
from hub.memory.index import VectorIndex

# A file is indexed within moments of being written; a mark taken in between (nothing
# was in flight yet) must not hide it.
MARGIN_S = 600.0
PAYLOAD_TEXT = 4000  # characters of an item's text its index payload keeps
_CHECK_BATCH = 256


def mark_path(home: Path) -> Path:
    return home / "index" / "synced"


def synced_at(home: Path) -> float | None:
    """When the index last matched the markdown (epoch seconds), or None if unknown."""
    try:
        return datetime.fromisoformat(mark_path(home).read_text(encoding="utf-8")).timestamp()
    except (OSError, ValueError):
        return None


def mark_synced(home: Path, at: datetime) -> None:
    path = mark_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, at.isoformat())


def changed_items(folder: Path, since: float | None) -> list[MemoryItem]:
    """The items of an Anima's memory files changed since `since` (all if None)."""
    cutoff = None if since is None else since - MARGIN_S
    items: list[MemoryItem] = []
    for name in ("episodes", *LAYER_DIRS.values()):
        for path in sorted((folder / name).glob("**/*.md")):
            if cutoff is not None and _mtime(path) < cutoff:
                continue
            try:
                items.extend(items_in(folder, path))
            except (ValueError, UnicodeDecodeError, OSError):
                continue  # an unreadable file is the rebuild's and the linter's to report
    return items


def behind(index: VectorIndex, anima: str, items: Sequence[MemoryItem]) -> list[MemoryItem]:
    """Those of `items` the index lacks, or holds with other text or for another Anima."""
    late: list[MemoryItem] = []
    for start in range(0, len(items), _CHECK_BATCH):
        batch = items[start : start + _CHECK_BATCH]
        held = index.payloads([item.id for item in batch])
        for item in batch:
            payload = held.get(item.id)
            if (
                payload is None
                or payload.get("text") != indexed_text(item)[:PAYLOAD_TEXT]
                or payload.get("anima") != anima
            ):
                late.append(item)
    return late


def _mtime(path: Path) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
