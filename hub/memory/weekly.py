"""The weekly stage: merge near-duplicate knowledge, flag stale procedures, compress old
episodes. Model calls come first; files are re-read and written after the last of them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from hub.markdown_files import atomic_write, read_document, write_document
from hub.memory.distill import MERGE_SIMILARITY, Distiller, OfflineDistiller, similarity
from hub.memory.documents import (
    ARCHIVED_EPISODES,
    Layer,
    MemoryItem,
    read_episodes,
    render_section,
    stable_id,
)
from hub.memory.notes import (
    FORGOTTEN,
    NOTE_DIRS,
    Changes,
    Ledger,
    Note,
    iso,
    load_notes,
    read,
    save,
)
from hub.memory.service import MemoryService
from hub.redaction.redact import redact

log = logging.getLogger(__name__)
COMPRESS_AFTER_DAYS = 30  # episode days older than this become summaries
STALE_AFTER_DAYS = 60  # a procedure neither updated nor recalled this long is flagged
MAX_DUPLICATE_CHECKS = 100  # model calls per weekly run asking "same note?"
CANDIDATE_SIMILARITY = 0.35  # with a model: pairs this alike are asked about


async def weekly(
    memory: MemoryService,
    distiller: Distiller,
    anima: str,
    today: date,
    now: datetime,
    changes: Changes,
) -> None:
    folder = memory.anima_dir(anima)
    ledger = Ledger(folder)
    await _merge_duplicates(folder, distiller, ledger, memory, anima, changes)
    _flag_stale(folder, memory, anima, today, now, changes)
    await _compress_episodes(folder, distiller, anima, today, changes)
    ledger.save()


# merging ----------------------------------------------------------------------------------


def _rank(note: Note, memory: MemoryService, anima: str) -> tuple[float, int, str, str]:
    """Which note of duplicates keeps its path: most important, most used, oldest."""
    created = note.time("created")
    return (
        -note.importance,
        -note.uses(memory.access(anima)),
        iso(created) if created else "~",
        note.path,
    )


async def _merge_duplicates(
    folder: Path,
    distiller: Distiller,
    ledger: Ledger,
    memory: MemoryService,
    anima: str,
    changes: Changes,
) -> None:
    """Knowledge notes of one scope that say the same thing become one note: the most
    important and used one keeps its path and takes the others' details and sources; the
    others stay on disk as `status: merged` with `merged_into`."""
    notes = [n for n in load_notes(folder, ("knowledge",)) if n.active]
    loose = MERGE_SIMILARITY if isinstance(distiller, OfflineDistiller) else CANDIDATE_SIMILARITY
    pairs: list[tuple[float, int, int]] = []
    for i, first in enumerate(notes):
        for j in range(i + 1, len(notes)):
            second = notes[j]
            if first.scope != second.scope or first.layer != second.layer:
                continue
            score = similarity(_content(first), _content(second))
            if score >= loose and not ledger.is_distinct(first.id, second.id):
                pairs.append((score, i, j))
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    parent = list(range(len(notes)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    checks = 0
    for _score, i, j in pairs:
        if root(i) == root(j):
            continue
        if checks >= MAX_DUPLICATE_CHECKS:
            break
        checks += 1
        if await distiller.same(_content(notes[i]), _content(notes[j])):
            parent[root(j)] = root(i)
        else:
            ledger.mark_distinct(notes[i].id, notes[j].id)
    clusters: dict[int, list[Note]] = {}
    for n, note in enumerate(notes):
        clusters.setdefault(root(n), []).append(note)
    plans: list[tuple[Note, list[Note], str]] = []
    for cluster in clusters.values():
        if len(cluster) < 2:
            continue
        keeper = min(cluster, key=lambda n: _rank(n, memory, anima))
        others = [n for n in cluster if n is not keeper]
        text = await distiller.merge([keeper.body, *(n.body for n in others)])
        plans.append((keeper, others, text))
    for keeper, others, text in plans:  # re-read: the model calls gave others time to write
        _merge(folder, read(folder, keeper.path), [read(folder, n.path) for n in others], text)
        changes.updated.append(keeper.path)
        changes.reindex.append(keeper.path)
        changes.merged.extend(n.path for n in others)
        changes.gone.extend(n.id for n in others)


def _content(note: Note) -> str:
    return f"{note.meta.get('title') or ''}\n{note.body}"


def _merge(folder: Path, keeper: Note, others: Sequence[Note], text: str) -> None:
    subjects = set(keeper.subjects)
    aliases = list(keeper.meta.get("aliases") or [])
    sources = keeper.sources
    seen = set(keeper.source_ids)
    for other in others:
        aliases.extend(s for s in other.subjects if s not in subjects and s not in aliases)
        for ref in other.sources:
            if str(ref.get("id")) not in seen:
                seen.add(str(ref.get("id")))
                sources.append(ref)
    times = [t for n in (keeper, *others) if (t := n.time("updated")) is not None]
    if times:
        keeper.meta["updated"] = iso(max(times))
    keeper.meta["importance"] = max(n.importance for n in (keeper, *others))
    if aliases:
        keeper.meta["aliases"] = aliases
    if sources:
        keeper.meta["sources"] = sources
    merged_from = list(keeper.meta.get("merged_from") or [])
    keeper.meta["merged_from"] = [*merged_from, *(n.path for n in others)]
    keeper.body = text.strip()
    save(folder, keeper)
    for other in others:
        other.meta["status"] = "merged"
        other.meta["merged_into"] = keeper.path
        save(folder, other)


# stale procedures -------------------------------------------------------------------------


def _flag_stale(
    folder: Path, memory: MemoryService, anima: str, today: date, now: datetime, changes: Changes
) -> None:
    """Flag procedures neither updated nor recalled for `STALE_AFTER_DAYS` (`stale: true`,
    `stale_since`); a flagged one that was used again loses the flag."""
    access = memory.access(anima)
    for note in load_notes(folder, ("procedures",)):
        if not note.active:
            continue
        touched = note.last_touched(access)
        stale = touched is not None and now - touched > timedelta(days=STALE_AFTER_DAYS)
        if stale and note.meta.get("stale") is not True:
            note.meta["stale"] = True
            note.meta["stale_since"] = today.isoformat()
            save(folder, note)
            changes.flagged.append(note.path)
        elif not stale and "stale" in note.meta:
            note.meta.pop("stale")
            note.meta.pop("stale_since", None)
            save(folder, note)
            changes.updated.append(note.path)


# compressing old episodes -----------------------------------------------------------------


async def _compress_episodes(
    folder: Path, distiller: Distiller, anima: str, today: date, changes: Changes
) -> None:
    """Each episode day older than `COMPRESS_AFTER_DAYS` becomes one summary section per
    privacy scope; the original file moves to `archive/episodes/` unchanged."""
    cutoff = today - timedelta(days=COMPRESS_AFTER_DAYS)
    moved: dict[str, str] = {}
    for path in sorted((folder / "episodes").glob("*.md")):
        try:
            day = date.fromisoformat(path.stem)
        except ValueError:
            continue
        meta, _body = read_document(path)
        if day >= cutoff or meta.get("compressed"):
            continue
        original = path.read_text(encoding="utf-8")
        items = read_episodes(folder, path)
        groups: dict[tuple[str, str], list[MemoryItem]] = {}
        for item in items:  # one summary per privacy scope and conversation place
            groups.setdefault((item.scope, item.channel or ""), []).append(item)
        summaries = [await distiller.compress(anima, group) for group in groups.values()]
        if path.read_text(encoding="utf-8") != original:
            log.warning("%s changed while it was summarized; next week's run compresses it", path)
            continue
        relative = path.relative_to(folder).as_posix()
        archived = f"{ARCHIVED_EPISODES}/{path.name}"
        target = folder / archived
        if target.exists() and target.read_text(encoding="utf-8") != original:
            log.error("%s exists and differs from %s: not compressing it", target, relative)
            continue
        atomic_write(target, original)
        sections = [
            _summary(relative, archived, group, text)
            for group, text in zip(groups.values(), summaries, strict=True)
        ]
        meta["compressed"] = True
        meta["original"] = archived
        body = f"# {day.isoformat()}\n\n" + "\n".join(render_section(s) for s in sections)
        write_document(path, meta, body)
        moved[relative] = archived
        changes.compressed.append(relative)
        changes.reindex.append(relative)
        changes.gone.extend(item.id for item in items)
    if moved:
        _repoint_sources(folder, moved)


def _summary(relative: str, archived: str, group: list[MemoryItem], text: str) -> MemoryItem:
    first, last = group[0], group[-1]
    count = f"{len(group)} entr{'y' if len(group) == 1 else 'ies'}"
    header = f"**Summary** of {count}, {first.section}–{last.section} (original: {archived})"
    return MemoryItem(
        id=stable_id("summary", relative, first.scope, first.channel or ""),
        layer=Layer.EPISODIC,
        text=redact(f"{header}\n{text.strip()}")[0],
        path=relative,
        scope=first.scope,
        created=first.created,
        updated=max(i.updated for i in group),
        person=first.person if len({i.person for i in group}) == 1 else None,
        channel=first.channel,
        importance=max(i.importance for i in group),
        section=first.section,
    )


def _repoint_sources(folder: Path, moved: dict[str, str]) -> None:
    """Notes' `sources` pointing into a compressed day now point into its archived copy."""
    for note in load_notes(folder, (*NOTE_DIRS, FORGOTTEN)):
        refs: list[dict[str, Any]] = note.sources
        changed = False
        for ref in refs:
            episode, _, section = str(ref.get("episode", "")).partition("#")
            if episode in moved:
                ref["episode"] = f"{moved[episode]}#{section}"
                changed = True
        if changed:
            note.meta["sources"] = refs
            save(folder, note)
