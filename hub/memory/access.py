"""How often and how recently each memory was recalled: what ranking ("use") and
forgetting (issue 4) read.

Counts live in memory and are flushed to `<anima>/.access.json`, and into the front matter
of note files (one item per file, so a cheap rewrite); episode files keep the counts only
in the sidecar until consolidation rewrites them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from hub.files import atomic_write, read_document, write_document

SIDECAR = ".access.json"


class AccessLog:
    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._path = folder / SIDECAR
        self._stats: dict[str, tuple[int, float]] = {}
        self._paths: dict[str, str] = {}  # item id -> note path, for front matter
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

    def flush(self) -> None:
        if not self._dirty:
            return
        atomic_write(self._path, json.dumps(self._stats, sort_keys=True))
        for item_id in self._dirty & self._paths.keys():
            self._write_front_matter(self._folder / self._paths[item_id], item_id)
        self._dirty.clear()

    def _write_front_matter(self, path: Path, item_id: str) -> None:
        if not path.exists():
            return
        meta, body = read_document(path)
        count, last = self._stats[item_id]
        meta["access_count"] = count
        meta["last_access"] = datetime.fromtimestamp(last, UTC).isoformat(timespec="seconds")
        write_document(path, meta, body)
