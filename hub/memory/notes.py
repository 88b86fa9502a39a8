"""Note files as consolidation reads and writes them: front matter kept whole.

`MemoryItem` carries what recall needs; consolidation also reads and writes `subject`,
`sources`, `status`, `superseded_by` and the rest, so it works on the raw front matter and
writes every key back in the order it was read (an unchanged note is rewritten byte for
byte, which is what makes every stage idempotent).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from hub.markdown_files import atomic_write, read_document, write_document
from hub.memory.access import AccessLog
from hub.memory.documents import (
    IMPORTANT_MARK,
    LAYER_DIRS,
    Layer,
    is_retired,
    stable_id,
)
from hub.memory.slugs import slug
from hub.redaction.redact import redact

log = logging.getLogger(__name__)
NOTE_DIRS = ("knowledge", "procedures")  # what consolidation writes, merges and forgets
FORGOTTEN = "archive/forgotten"
LEDGER = ".consolidation.json"
_STEM_CHARS = 60


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def moment(value: Any) -> datetime | None:
    """A front matter time (ISO string, or what YAML parsed) as an aware datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


@dataclass
class Note:
    """One note file: its path relative to the Anima's folder, front matter and body."""

    path: str
    meta: dict[str, Any]
    body: str

    @property
    def id(self) -> str:
        return str(self.meta.get("id") or stable_id(self.path, ""))

    @property
    def folder(self) -> str:
        return self.path.split("/", 1)[0]

    @property
    def layer(self) -> str:
        return str(self.meta.get("layer") or _folder_layer(self.folder))

    @property
    def scope(self) -> str:
        return str(self.meta.get("scope") or "shared")

    @property
    def active(self) -> bool:
        return not is_retired(self.meta)

    @property
    def subjects(self) -> list[str]:
        """The subject key consolidation filed it under, and those merged into it."""
        found = [self.meta.get("subject"), *_listed(self.meta.get("aliases"))]
        return [str(s) for s in found if s]

    @property
    def source_ids(self) -> list[str]:
        return [str(s.get("id")) for s in self.sources]

    @property
    def sources(self) -> list[dict[str, Any]]:
        return [s for s in _listed(self.meta.get("sources")) if isinstance(s, dict)]

    @property
    def importance(self) -> float:
        try:
            return float(self.meta.get("importance") or 0.0)
        except (TypeError, ValueError):
            return 0.0

    @property
    def important(self) -> bool:
        return self.importance >= 1.0 or IMPORTANT_MARK in self.body

    def time(self, key: str) -> datetime | None:
        return moment(self.meta.get(key))

    def uses(self, access: AccessLog) -> int:
        """Recalls counted in the front matter or, if newer, in the access sidecar."""
        try:
            counted = int(self.meta.get("access_count") or 0)
        except (TypeError, ValueError, OverflowError):  # OverflowError: `.inf`
            counted = 0
        return max(counted, access.count(self.id))

    def last_touched(self, access: AccessLog) -> datetime | None:
        """The latest of creation, update, restore and recall: what forgetting measures."""
        times = [self.time(k) for k in ("created", "updated", "last_access", "restored")]
        recalled = access.last(self.id)
        if recalled:
            times.append(datetime.fromtimestamp(recalled, UTC))
        known = [t for t in times if t is not None]
        return max(known) if known else None


def _listed(value: Any) -> list[Any]:
    """A front matter list; a lone value (`aliases: x`) as a list of one, nothing as []."""
    if value is None or value == "":
        return []
    return value if isinstance(value, list) else [value]


def _folder_layer(folder: str) -> str:
    for layer, name in LAYER_DIRS.items():
        if name == folder:
            return layer.value
    return Layer.SEMANTIC.value


def read(anima_dir: Path, relative: str) -> Note:
    meta, body = read_document(anima_dir / relative)
    return Note(relative, meta, body.strip())


def load_notes(anima_dir: Path, folders: Iterable[str] = NOTE_DIRS) -> list[Note]:
    """Every note under `folders`, active and retired, in path order; a file whose front
    matter cannot be read is left alone (and logged)."""
    notes = []
    for folder in folders:
        for path in sorted((anima_dir / folder).glob("**/*.md")):
            try:
                notes.append(read(anima_dir, path.relative_to(anima_dir).as_posix()))
            except (yaml.YAMLError, UnicodeDecodeError) as exc:
                log.warning("%s is not a readable note, skipped: %s", path, exc)
    return notes


def save(anima_dir: Path, note: Note) -> bool:
    """Write the note (body redacted) atomically; False, and no write, if the file already
    holds exactly this."""
    target = anima_dir / note.path
    body = redact(note.body)[0].strip()
    if target.exists():
        meta, old = read_document(target)
        if meta == note.meta and old.strip() == body:
            return False
    write_document(target, note.meta, body + "\n")
    return True


def free_path(anima_dir: Path, folder: str, name: str, taken: set[str]) -> str:
    """`folder/<slug>.md`, or with `-2`, `-3`, ... when a file (or this run) has it."""
    stem = slug(name)[:_STEM_CHARS].strip("-_") or "note"
    for n in range(1, 10_000):
        relative = f"{folder}/{stem}.md" if n == 1 else f"{folder}/{stem}-{n}.md"
        if relative not in taken and not (anima_dir / relative).exists():
            taken.add(relative)
            return relative
    raise RuntimeError(f"no free note name for {stem!r} in {folder}")


@dataclass
class Changes:
    """What a stage did: report lists (relative paths), and what the index must follow."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    compressed: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    reindex: list[str] = field(default_factory=list)  # files whose items to (re)index
    gone: list[str] = field(default_factory=list)  # item ids to drop from the index


class Ledger:
    """`<anima>/.consolidation.json`: which episode sections were distilled already, and
    which note pairs a model judged distinct, so a second run asks nothing twice (a model
    may answer differently the second time; the files must not change)."""

    def __init__(self, anima_dir: Path) -> None:
        self._path = anima_dir / LEDGER
        raw: dict[str, Any] = {}
        if self._path.exists():
            try:
                raw = json.loads(self._path.read_text(encoding="utf-8"))
            except ValueError as exc:  # the notes' `sources` still keep reruns idempotent
                log.warning("%s is unreadable (%s): starting it afresh", self._path, exc)
        self._distilled: dict[str, list[str]] = {
            str(k): [str(i) for i in v] for k, v in (raw.get("distilled") or {}).items()
        }
        self._distinct: set[str] = {str(p) for p in raw.get("distinct") or []}
        self._saved = self._render()

    def distilled(self, episode: str) -> set[str]:
        return set(self._distilled.get(episode, []))

    def mark_distilled(self, episode: str, ids: Iterable[str]) -> None:
        known = self._distilled.setdefault(episode, [])
        known.extend(i for i in ids if i not in known)

    @staticmethod
    def _pair(first: str, second: str) -> str:
        return "|".join(sorted((first, second)))

    def is_distinct(self, first: str, second: str) -> bool:
        return self._pair(first, second) in self._distinct

    def mark_distinct(self, first: str, second: str) -> None:
        self._distinct.add(self._pair(first, second))

    def _render(self) -> str:
        data = {"distilled": self._distilled, "distinct": sorted(self._distinct)}
        return json.dumps(data, sort_keys=True, indent=1) + "\n"

    def save(self) -> None:
        text = self._render()
        if text != self._saved:
            atomic_write(self._path, text)
            self._saved = text
