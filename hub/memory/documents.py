"""Memory items as markdown: the truth that every index is rebuilt from (DESIGN §5).

Knowledge, procedures and skills are one file per item with YAML front matter. Episodes
are one file per day, `episodes/YYYY-MM-DD.md`, with a `## HH:MM` section per recorded turn;
each section carries its own metadata in an HTML comment (invisible when rendered), since a
day's turns differ in person, channel and privacy scope.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

import yaml

from hub.markdown_files import parse_document, read_document, write_document
from hub.plaintext import decode_block, encode_block

IMPORTANT_MARK = "[IMPORTANT]"
# Note statuses that keep a file out of recall (consolidation: superseded by a newer fact,
# or merged into a near-duplicate). The file stays, with a pointer to what replaced it.
RETIRED = frozenset({"superseded", "merged"})
_SECTION_RE = re.compile(r"^## (\d{2}:\d{2})\s*$", re.MULTILINE)
_META_PREFIX = "<!-- memory: "
_META_RE = re.compile(r"^<!-- memory: (\{.*\}) -->\s*$", re.MULTILINE)
# Characters json.dumps leaves raw that would end the metadata line for a reader splitting
# at every line boundary, or end the HTML comment for a markdown renderer.
_META_ESCAPES = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029", "-->": "--\\u003e"}
_ID_NAMESPACE = uuid.UUID("6f1d3c52-8a51-4b0e-9a59-3f2f0a7e2c11")
T = TypeVar("T")
log = logging.getLogger(__name__)


class MemoryFileError(ValueError):
    """A memory file whose metadata cannot describe an item, with the file and key."""


class Layer(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    SKILL = "skill"
    INTERPERSONAL = "interpersonal"


LAYER_DIRS = {
    Layer.SEMANTIC: "knowledge",
    Layer.PROCEDURAL: "procedures",
    Layer.SKILL: "skills",
}


# What a person or a model calls each layer when searching (REST `layer`, the CLI's
# `--layer`, the `search_memory` tool), and the layers of the index each one means.
# "people" is interpersonal memory: the profiles' learned facts, not in the index.
SEARCH_LAYERS: dict[str, tuple[str, ...] | None] = {
    "all": None,
    "episodes": (Layer.EPISODIC.value,),
    **{folder: (layer.value,) for layer, folder in LAYER_DIRS.items()},
    "people": (Layer.INTERPERSONAL.value,),
}
# Each layer by the name a search takes ("episodic" is "episodes").
LAYER_NAMES = {values[0]: name for name, values in SEARCH_LAYERS.items() if values}


def search_layer(name: str) -> str | None:
    """The `SEARCH_LAYERS` name `name` means, which may be a layer's own name as results
    show it ("procedural" is "procedures"), so a result's layer can be searched again;
    None when it names no layer."""
    return name if name in SEARCH_LAYERS else LAYER_NAMES.get(name)


def layer_name(layer: str) -> str:
    """A result's layer as a search names it ("semantic" is "knowledge")."""
    return LAYER_NAMES.get(layer, layer)


def stable_id(*parts: str) -> str:
    """A UUID derived from where an item lives, so a rebuild gives every item its old id."""
    return str(uuid.uuid5(_ID_NAMESPACE, "\x1f".join(parts)))


@dataclass
class MemoryItem:
    id: str
    layer: Layer
    text: str
    path: str  # relative to the Anima's folder (or the data root, for shared/users)
    scope: str  # "shared" | "person:<id>" | "channel:<channel key>"
    created: datetime
    updated: datetime
    person: str | None = None
    channel: str | None = None
    importance: float = 0.0
    access_count: int = 0
    last_access: datetime | None = None
    links: list[str] = field(default_factory=list)
    title: str = ""
    section: str | None = None  # "HH:MM" for episode sections

    def meta(self) -> dict[str, Any]:
        """Front matter / section metadata: everything but the text and its location."""
        data = asdict(self)
        for key in ("text", "path", "section"):
            data.pop(key)
        data["layer"] = self.layer.value
        for key in ("created", "updated", "last_access"):
            value = data[key]
            data[key] = value.isoformat(timespec="seconds") if value else None
        return data


def importance_of(text: str, default: float = 0.0) -> float:
    return 1.0 if IMPORTANT_MARK in text else default


def _when(value: Any, fallback: datetime) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str) and value:
        parsed = datetime.fromisoformat(value)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return fallback


def _links(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        return [value]  # one link written without the list
    if not isinstance(value, list):
        raise TypeError(f"expected a list of note names, not {type(value).__name__}")
    return [str(link) for link in value]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def item_from_meta(meta: dict[str, Any], text: str, path: str, section: str | None) -> MemoryItem:
    """The item a file's front matter (or a section's metadata) describes; MemoryFileError,
    naming the file and the key, for a value of the wrong kind (`importance: high`)."""
    where = f"{path} (section {section})" if section else path

    def read(key: str, convert: Callable[[Any], T]) -> T:
        try:
            return convert(meta.get(key))
        except (TypeError, ValueError, OverflowError) as exc:
            raise MemoryFileError(f"{where}: {key}: {exc}") from exc

    now = datetime.now(UTC)
    created = read("created", lambda value: _when(value, now))
    return MemoryItem(
        id=str(meta.get("id") or stable_id(path, section or "")),
        layer=read("layer", lambda value: Layer(value or Layer.SEMANTIC.value)),
        text=text,
        path=path,
        scope=str(meta.get("scope") or "shared"),
        created=created,
        updated=read("updated", lambda value: _when(value, created)),
        person=_text(meta.get("person")),
        channel=_text(meta.get("channel")),
        importance=read("importance", lambda value: float(value or importance_of(text))),
        access_count=read("access_count", lambda value: int(value or 0)),
        last_access=read("last_access", lambda value: _when(value, now) if value else None),
        links=read("links", _links),
        title=str(meta.get("title") or ""),
        section=section,
    )


# --- one file per item -------------------------------------------------------------------


def read_item(folder: Path, path: Path) -> MemoryItem:
    meta, body = read_document(path)
    return _note_item(folder, path, meta, body)


def _note_item(folder: Path, path: Path, meta: dict[str, Any], body: str) -> MemoryItem:
    meta.setdefault("layer", _layer_of(folder, path).value)
    meta.setdefault("title", path.stem.replace("-", " "))
    return item_from_meta(meta, body.strip(), path.relative_to(folder).as_posix(), None)


def is_retired(meta: Mapping[str, Any]) -> bool:
    """A note consolidation superseded or merged: kept on disk, never recalled."""
    status = meta.get("status")
    return isinstance(status, str) and status in RETIRED  # a list is no status (and unhashable)


def read_note(folder: Path, path: Path) -> MemoryItem | None:
    """One note file as an item, or None if it is retired."""
    meta, body = read_document(path)
    return None if is_retired(meta) else _note_item(folder, path, meta, body)


def iter_notes(folder: Path) -> list[MemoryItem]:
    """Every recallable note (knowledge, procedures, skills) of an Anima."""
    items: list[MemoryItem] = []
    for name in LAYER_DIRS.values():
        for path in sorted((folder / name).glob("**/*.md")):
            item = _readable(read_note, folder, path)
            if item is not None:
                items.append(item)
    return items


# What reading a memory file raises when the file is not one it can read.
UNREADABLE = (yaml.YAMLError, UnicodeDecodeError, MemoryFileError)


def _readable(reader: Callable[[Path, Path], T], folder: Path, path: Path) -> T | None:
    """What `reader` makes of one file, or None (and a warning) when it cannot be read: one
    hand-edited file with a bad key does not stop a rebuild of all the others."""
    try:
        return reader(folder, path)
    except UNREADABLE as exc:
        log.warning("%s is not a readable memory file, skipped: %s", path, exc)
        return None


def write_item(folder: Path, item: MemoryItem) -> None:
    write_document(folder / item.path, item.meta(), item.text.strip() + "\n")


def _layer_of(folder: Path, path: Path) -> Layer:
    top = path.relative_to(folder).parts[0]
    for layer, name in LAYER_DIRS.items():
        if top == name:
            return layer
    return Layer.SEMANTIC


# --- episodes: one file a day, a section a turn ------------------------------------------


def episode_path(day: date) -> str:
    return f"episodes/{day.isoformat()}.md"


def render_section(item: MemoryItem) -> str:
    """One item as its section: the heading, the metadata comment on one line, the text
    with every line a reader could take for structure escaped (hub/plaintext.py)."""
    meta = json.dumps(item.meta(), ensure_ascii=False, sort_keys=True)
    for raw, escaped in _META_ESCAPES.items():  # only ever inside a JSON string
        meta = meta.replace(raw, escaped)
    return f"## {item.section}\n{_META_PREFIX}{meta} -->\n{encode_block(item.text.strip())}\n"


def read_episodes(folder: Path, path: Path) -> list[MemoryItem]:
    """Every section of one day's episode file, in order."""
    _meta, body = read_document(path)
    return _episode_items(path.relative_to(folder).as_posix(), body)


def _episode_items(relative: str, body: str, scoped: bool = False) -> list[MemoryItem]:
    """The sections of a day; `scoped`: MemoryFileError for one whose metadata names no
    privacy scope (what a person reads must have one, hub/memory/readable.py)."""
    items = []
    starts = list(_SECTION_RE.finditer(body))
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(body)
        chunk = body[match.end() : end]
        meta_match = _META_RE.search(chunk)
        try:
            meta = json.loads(meta_match.group(1)) if meta_match else {}
        except ValueError as exc:
            where = f"{relative} (section {match.group(1)})"
            raise MemoryFileError(f"{where}: its memory comment is not JSON: {exc}") from exc
        if scoped and not (isinstance(meta, dict) and meta.get("scope")):
            raise MemoryFileError(f"{relative} (section {match.group(1)}): no privacy scope")
        text = decode_block(_META_RE.sub("", chunk).strip())
        meta.setdefault("layer", Layer.EPISODIC.value)
        items.append(item_from_meta(meta, text, relative, match.group(1)))
    return items


def _holds_section(body: str, item_id: str) -> bool:
    """Whether a section's metadata comment gives `item_id` (render_section). Only those
    lines are looked at: a text quoting an id is not that item (its lines cannot open
    with the comment, being escaped), and a JSON string cannot hold the unescaped mark."""
    mark = f'"id": "{item_id}"'
    return any(ln.startswith(_META_PREFIX) and mark in ln for ln in body.split("\n"))


def has_section(path: Path, item_id: str) -> bool:
    """Whether the episode file at `path` holds the section of `item_id`."""
    return path.is_file() and _holds_section(path.read_text(encoding="utf-8"), item_id)


def append_episode(folder: Path, item: MemoryItem) -> bool:
    """Add one section to its day's file (created with its front matter when new).

    Idempotent by item id: a turn retried after a crash is recorded once. False if the
    section was already there."""
    path = folder / item.path
    if path.exists():
        meta, body = read_document(path)
        if _holds_section(body, item.id):
            return False
    else:
        day = item.created.date().isoformat()
        meta, body = {"layer": Layer.EPISODIC.value, "date": day}, f"# {day}\n"
    write_document(path, meta, body.rstrip() + "\n\n" + render_section(item))
    return True


def rewrite_episodes(folder: Path, path: str, items: list[MemoryItem]) -> None:
    """Write a day's file from its items (used when sections change or are compressed)."""
    full = folder / path
    meta, _body = read_document(full) if full.exists() else ({}, "")
    day = path.rsplit("/", 1)[-1].removesuffix(".md")
    meta.setdefault("layer", Layer.EPISODIC.value)
    meta.setdefault("date", day)
    sections = "\n".join(render_section(item) for item in items)
    write_document(full, meta, f"# {day}\n\n{sections}")


ARCHIVED_EPISODES = "archive/episodes"  # where the weekly stage moves old days, unchanged


def is_episode_file(relative: str) -> bool:
    """A day of episodes, or its copy the weekly stage archived: either is read section by
    section, each with the scope it was written with (never as one note, which would be
    shared for want of a `scope` in its front matter)."""
    return relative.split("/", 1)[0] == "episodes" or relative.startswith(f"{ARCHIVED_EPISODES}/")


def items_in(folder: Path, path: Path, scoped: bool = False) -> list[MemoryItem]:
    """The items one file holds: an episode file's sections, one note, or nothing for a
    retired note. `scoped`: every section must name its scope (`_episode_items`)."""
    return items_of_text(folder, path, path.read_bytes().decode("utf-8"), scoped)


def items_of_text(folder: Path, path: Path, text: str, scoped: bool = False) -> list[MemoryItem]:
    """The items `path` would hold with this text (yaml.YAMLError or MemoryFileError when it
    holds none it can): what a write checks before it replaces a file."""
    meta, body = parse_document(text)
    if is_episode_file(path.relative_to(folder).as_posix()):
        return _episode_items(path.relative_to(folder).as_posix(), body, scoped)
    return [] if is_retired(meta) else [_note_item(folder, path, meta, body)]


def iter_items(folder: Path) -> list[MemoryItem]:
    """Every recallable memory item of an Anima, from its markdown (what a rebuild
    indexes): retired notes stay on disk but out of the index."""
    items: list[MemoryItem] = []
    for path in sorted((folder / "episodes").glob("*.md")):
        items.extend(_readable(read_episodes, folder, path) or [])
    items.extend(iter_notes(folder))
    return items
