"""What the dashboard's memory browser lists (docs/memory.md "Browsing it"): episode days,
knowledge and procedure notes with the [[wikilinks]] between them, and forgotten notes.

Every listing takes `visible`, whether the caller may see an item of a privacy scope
(hub/views/mcp_tools.py `MemoryTools.visible`: a person sees what a DM with them would recall, an
admin everything), and leaves out what they may not: a link to a note they cannot see is
drawn as a note that is missing, named by the link's own words, never by that note's path
or title.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from hub.markdown_files import read_document
from hub.memory.documents import UNREADABLE, MemoryItem, read_episodes
from hub.memory.graph import links_of, note_aliases
from hub.memory.notes import FORGOTTEN, NOTE_DIRS

Visible = Callable[[str], bool]
"""Whether the caller may see an item of this privacy scope."""
MISSING = "missing"  # the layer of a graph node no note the caller can see answers to
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NoteView:
    path: str
    title: str
    layer: str  # its folder: knowledge | procedures
    scope: str
    updated_at: datetime
    links: list[str] = field(default_factory=list)  # paths of the notes it links to


@dataclass(frozen=True, slots=True)
class Graph:
    nodes: list[dict[str, str]]  # {id, title, layer}
    edges: list[dict[str, str]]  # {source, target}


@dataclass(frozen=True, slots=True)
class ForgottenNote:
    path: str  # under archive/forgotten/, what restore takes
    archived_at: datetime | None
    title: str
    scope: str


def folder_of(item: MemoryItem) -> str:
    return item.path.split("/", 1)[0]


def episode_days(folder: Path, visible: Visible) -> list[tuple[date, int]]:
    """Each day of `episodes/YYYY-MM-DD.md` with how many of its sections the caller may
    see, latest first; a day with none is left out, and so is a file the indexer cannot
    read (logged, as a rebuild skips it)."""
    days = []
    for path in sorted((folder / "episodes").glob("*.md"), reverse=True):
        try:
            day = date.fromisoformat(path.stem)
            items = read_episodes(folder, path)
        except (ValueError, *UNREADABLE) as exc:  # not a day's name, or not readable
            log.warning("%s is not a readable episode file, skipped: %s", path, exc)
            continue
        seen = sum(1 for item in items if visible(item.scope))
        if seen:
            days.append((day, seen))
    return days


def _browsed(items: Iterable[MemoryItem], visible: Visible) -> list[MemoryItem]:
    return [i for i in items if folder_of(i) in NOTE_DIRS and visible(i.scope)]


def notes(
    items: Iterable[MemoryItem], visible: Visible, layers: Iterable[str] = NOTE_DIRS
) -> list[NoteView]:
    """The knowledge and procedure notes the caller may see (of `items`, an Anima's
    recallable notes: `MemoryService.graph(...).items`), by path, each with the notes it
    links to that the caller may see too."""
    shown = _browsed(items, visible)
    aliases = note_aliases(shown)
    wanted = set(layers)
    return [
        NoteView(
            item.path,
            item.title,
            folder_of(item),
            item.scope,
            item.updated.astimezone(UTC),
            sorted({aliases[t] for t in links_of(item) if aliases.get(t, item.path) != item.path}),
        )
        for item in sorted(shown, key=lambda i: i.path)
        if folder_of(item) in wanted
    ]


def graph(items: Sequence[MemoryItem], visible: Visible) -> Graph:
    """Nodes and directed edges (linking note → linked note) of the wikilinks between the
    knowledge and procedure notes the caller may see, of `items` (an Anima's recallable
    notes). A link that names none of them is an edge to a node of layer "missing" with id
    `[[slug]]` (the link's words, slugged), unless it names a skill (skills are not drawn)."""
    shown = _browsed(items, visible)
    aliases = note_aliases(shown)
    skills = set(note_aliases(i for i in items if folder_of(i) == "skills" and visible(i.scope)))
    nodes: dict[str, dict[str, str]] = {
        i.path: {"id": i.path, "title": i.title, "layer": folder_of(i)}
        for i in sorted(shown, key=lambda i: i.path)
    }
    missing: dict[str, dict[str, str]] = {}
    edges: set[tuple[str, str]] = set()
    for item in shown:
        for target in links_of(item):
            if target in aliases:
                if aliases[target] != item.path:
                    edges.add((item.path, aliases[target]))
            elif target not in skills:
                key = f"[[{target}]]"
                missing[key] = {"id": key, "title": target.replace("-", " "), "layer": MISSING}
                edges.add((item.path, key))
    return Graph(
        [*nodes.values(), *(missing[k] for k in sorted(missing))],
        [{"source": s, "target": t} for s, t in sorted(edges)],
    )


def forgotten(folder: Path, visible: Visible) -> list[ForgottenNote]:
    """The notes the monthly stage moved to `archive/forgotten/`, latest first (those with
    no readable `forgotten:` time last); a file whose front matter cannot be read is left
    out (logged)."""
    found = []
    for path in sorted((folder / FORGOTTEN).glob("**/*.md")):
        try:
            meta, _body = read_document(path)
        except UNREADABLE as exc:
            log.warning("%s is not a readable note, skipped: %s", path, exc)
            continue
        scope = str(meta.get("scope") or "shared")
        if visible(scope):
            title = str(meta.get("title") or path.stem.replace("-", " "))
            relative = path.relative_to(folder).as_posix()
            found.append(ForgottenNote(relative, _moment(meta.get("forgotten")), title, scope))
    oldest = datetime.min.replace(tzinfo=UTC)
    found.sort(key=lambda note: (note.archived_at or oldest, note.path), reverse=True)
    return found


def _moment(value: Any) -> datetime | None:
    """A front-matter time (YAML may have read it as a datetime already), in UTC."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
