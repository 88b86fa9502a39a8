"""How often and how recently each memory was recalled: what ranking ("use") and
forgetting (issue 4) read.

Counts live in memory and are flushed to `<anima>/.access.json` (the record ranking reads),
and into the markdown: the front matter of note files and the metadata of episode sections,
so what the files say about use is true too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from hub.markdown_files import atomic_write, read_document, write_document
from hub.memory.documents import read_episodes, rewrite_episodes

SIDECAR = ".access.json"


class AccessLog:
    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._path = folder / SIDECAR
        self._stats: dict[str, tuple[int, float]] = {}
        self._paths: dict[str, str] = {}  # item id -> note path, for front matter
        self._sections: dict[str, str] = {}  # item id -> episode file, for its section
        self._dirty: set[str] = set()
        if self._path.exists():
            raw = json.loads(self._path.read_text(encoding="utf-8"))
            self._stats = {k: (int(v[0]), float(v[1])) for k, v in raw.items()}

    def count(self, item_id: str) -> int:
        return self._stats.get(item_id, (0, 0.0))[0]

    def last(self, item_id: str) -> float | None:
        found = self._stats.get(item_id)
        return found[1] if found else None

    def touch(self, recalled: Iterable[tuple[str, str, str | None]], now: datetime) -> None:
        """Count one use of each (id, path, section) that was recalled."""
        for item_id, path, section in recalled:
            count, _ = self._stats.get(item_id, (0, 0.0))
            self._stats[item_id] = (count + 1, now.timestamp())
            self._dirty.add(item_id)
            if section is None:
                self._paths[item_id] = path
            else:
                self._sections[item_id] = path

    def flush(self) -> None:
        if not self._dirty:
            return
        atomic_write(self._path, json.dumps(self._stats, sort_keys=True))
        for item_id in self._dirty & self._paths.keys():
            self._write_front_matter(self._folder / self._paths[item_id], item_id)
        by_file: dict[str, set[str]] = {}
        for item_id in self._dirty & self._sections.keys():
            by_file.setdefault(self._sections[item_id], set()).add(item_id)
        for path, ids in by_file.items():
            self._write_sections(path, ids)
        self._dirty.clear()

    def _write_sections(self, path: str, ids: set[str]) -> None:
        """One rewrite of an episode file for all its sections recalled since the last flush
        (read and written without a pause in between, so no append is lost)."""
        full = self._folder / path
        if not full.exists():
            return
        items = read_episodes(self._folder, full)
        for item in items:
            if item.id in ids:
                count, last = self._stats[item.id]
                item.access_count = count
                item.last_access = datetime.fromtimestamp(last, UTC)
        rewrite_episodes(self._folder, path, items)

    def _write_front_matter(self, path: Path, item_id: str) -> None:
        if not path.exists():
            return
        meta, body = read_document(path)
        count, last = self._stats[item_id]
        meta["access_count"] = count
        meta["last_access"] = datetime.fromtimestamp(last, UTC).isoformat(timespec="seconds")
        write_document(path, meta, body)
