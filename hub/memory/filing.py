"""Filing the facts a day's distillation found: statements that say the same thing pool
their sources, one per (layer, scope, subject) wins, and each winner restates its subject's
note, adds a line to a log, supersedes the note (or is superseded by it), or starts a new
one. Consolidation's daily stage (consolidation.py) runs this between distilling and
indexing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hub.memory.distill import Fact, add_lines, restates
from hub.memory.documents import LAYER_DIRS, Layer, MemoryItem, stable_id
from hub.memory.notes import Changes, Note, free_path, iso, save
from hub.redaction.redact import redact

NOTE_IMPORTANCE = 0.5  # distilled notes rank a little above raw episodes
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Candidate:
    """A fact with its source sections (all of one scope), ready to be filed."""

    fact: Fact
    sources: list[MemoryItem]
    important: bool

    @property
    def scope(self) -> str:
        return self.sources[0].scope

    @property
    def at(self) -> datetime:
        return max(s.created for s in self.sources)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.fact.layer.value, self.scope, self.fact.subject)


def winners(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per (layer, scope, subject): statements that say the same thing pool
    their sources; the best supported wins ([IMPORTANT], then most source sections, then
    the latest)."""
    groups: dict[tuple[str, str, str], list[Candidate]] = {}
    for candidate in sorted(candidates, key=lambda c: (c.at, c.fact.text)):
        pooled = groups.setdefault(candidate.key, [])
        subject = candidate.fact.subject
        same = next(
            (p for p in pooled if restates(p.fact.text, candidate.fact.text, subject)), None
        )
        if same is None:
            pooled.append(candidate)
            continue
        _pool(same, candidate)
        if candidate.at >= same.at:  # keep the latest wording
            same.fact = candidate.fact
    winners = [
        _logged(pooled) if pooled[0].fact.accumulates else _best(pooled)
        for pooled in groups.values()
    ]
    return sorted(winners, key=lambda c: (c.sources[0].created, c.key))


def _pool(same: Candidate, candidate: Candidate) -> None:
    sources = {s.id: s for s in [*same.sources, *candidate.sources]}
    same.sources = sorted(sources.values(), key=lambda s: (s.created, s.id))
    same.important = same.important or candidate.important


def _best(pooled: list[Candidate]) -> Candidate:
    return max(pooled, key=lambda c: (c.important, len(c.sources), c.at, c.fact.text))


def _logged(pooled: list[Candidate]) -> Candidate:
    """A log's statements as one candidate: every line, in the order they were said."""
    first = pooled[0]
    text = first.fact.text
    for other in pooled[1:]:
        text = add_lines(text, other.fact.text)
        _pool(first, other)
    first.fact = replace(first.fact, text=text)
    return first


def file_fact(
    folder: Path, notes: list[Note], candidate: Candidate, changes: Changes, taken: set[str]
) -> None:
    """File one fact: restate the note of its subject, supersede it, or start a new one."""
    layer, scope, subject = candidate.key
    keyed = [n for n in notes if n.layer == layer and n.scope == scope and subject in n.subjects]
    ids = {s.id for s in candidate.sources}
    if any(ids <= set(n.source_ids) for n in keyed):
        return  # filed by an earlier run
    current = next((n for n in keyed if n.active), None)
    if current is not None and candidate.fact.accumulates:  # a log: its new lines added
        current.body = add_lines(current.body, candidate.fact.text)
        _add_sources(current, candidate)
        if save(folder, current):
            changes.updated.append(current.path)
            changes.reindex.append(current.path)
        return
    if current is not None and restates(current.body, candidate.fact.text, subject):
        _add_sources(current, candidate)
        if save(folder, current):
            changes.updated.append(current.path)
            changes.reindex.append(current.path)
        return
    note = _new_note(folder, candidate, taken)
    notes.append(note)
    changes.created.append(note.path)
    if current is None:
        save(folder, note)
        changes.reindex.append(note.path)
        return
    older_wins = current.important and not candidate.important
    newer = candidate.at >= (current.time("updated") or _EPOCH)
    if newer and not older_wins:
        note.meta["supersedes"] = current.path
        _supersede(current, note.path)
        changes.superseded.append(current.path)
        changes.gone.append(current.id)
        changes.reindex.append(note.path)
    else:
        _supersede(note, current.path)
        changes.superseded.append(note.path)
    save(folder, current)
    save(folder, note)


def _supersede(note: Note, by: str) -> None:
    note.meta["status"] = "superseded"
    note.meta["superseded_by"] = by


def _source_refs(sources: Sequence[MemoryItem]) -> list[dict[str, Any]]:
    return [{"id": s.id, "episode": f"{s.path}#{s.section}"} for s in sources]


def _add_sources(note: Note, candidate: Candidate) -> None:
    known = set(note.source_ids)
    fresh = [s for s in candidate.sources if s.id not in known]
    if fresh:
        note.meta["sources"] = [*note.sources, *_source_refs(fresh)]
        updated = note.time("updated")
        if updated is None or candidate.at > updated:
            note.meta["updated"] = iso(candidate.at)
    if candidate.important and note.importance < 1.0:
        note.meta["importance"] = 1.0


def _new_note(folder: Path, candidate: Candidate, taken: set[str]) -> Note:
    fact, first = candidate.fact, candidate.sources[0]
    layer, scope, subject = candidate.key
    directory = LAYER_DIRS[Layer(layer)]
    path = free_path(folder, directory, subject, taken)
    meta: dict[str, Any] = {
        "id": stable_id("note", layer, scope, subject, first.id),
        "layer": layer,
        "title": redact(fact.title)[0],
        "subject": subject,
        "status": "active",
        "created": iso(first.created),
        "updated": iso(candidate.at),
        "scope": scope,
        "person": first.person,
        "channel": first.channel,
        "importance": 1.0 if candidate.important else NOTE_IMPORTANCE,
        "access_count": 0,
        "last_access": None,
        "links": [],
        "sources": _source_refs(candidate.sources),
    }
    return Note(path, meta, fact.text.strip())
