"""Active forgetting (the monthly stage) and its undo, `restore`.

A note in `knowledge/` or `procedures/` is forgotten when it was used (recalled) fewer than
`FORGET_BELOW_USES` times and nothing touched it (created, updated, restored, recalled) for
`FORGET_AFTER_DAYS`. It moves, front matter and all, to `archive/forgotten/<its path>`, with
`forgotten: <time>` added, and leaves the index. Never forgotten: skills (`skills/` is not
looked at), people's profiles (`shared/users/`, outside the Anima's folder), notes with
importance 1.0 or `[IMPORTANT]` in the text, notes with `protected: true`, and notes whose
age is unknown (no times in their front matter).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from hub.markdown_files import read_document, write_document
from hub.memory.access import AccessLog
from hub.memory.notes import FORGOTTEN, NOTE_DIRS, Changes, Note, iso, load_notes
from hub.memory.paths import MemoryPathError, memory_path

FORGET_AFTER_DAYS = 90
FORGET_BELOW_USES = 3


def forgettable(note: Note, access: AccessLog, now: datetime) -> bool:
    if note.important or note.meta.get("protected") is True:
        return False
    if note.uses(access) >= FORGET_BELOW_USES:
        return False
    touched = note.last_touched(access)
    return touched is not None and now - touched >= timedelta(days=FORGET_AFTER_DAYS)


def forget(folder: Path, access: AccessLog, now: datetime, changes: Changes) -> None:
    for note in load_notes(folder, NOTE_DIRS):
        if not forgettable(note, access, now):
            continue
        target = _free(folder, f"{FORGOTTEN}/{note.path}")
        note.meta["forgotten"] = iso(now)
        write_document(folder / target, note.meta, note.body + "\n")
        (folder / note.path).unlink()
        changes.forgotten.append(note.path)
        changes.gone.append(note.id)


def _free(folder: Path, relative: str) -> str:
    """`relative`, or `<stem>-2.md`, ... if an earlier forgetting left a file there."""
    stem = relative.removesuffix(".md")
    n = 1
    while (folder / relative).exists():
        n += 1
        relative = f"{stem}-{n}.md"
    return relative


def restore(folder: Path, path: str, now: datetime) -> str:
    """Move one forgotten note back where it was; return its path. `path` is relative to
    the Anima's folder, under `archive/forgotten/` (the prefix may be left out)."""
    memory_path(folder, path)  # relative, inside, markdown: or MemoryPathError
    relative = path if path.startswith(f"{FORGOTTEN}/") else f"{FORGOTTEN}/{path}"
    source = memory_path(folder, relative)
    back = relative.removeprefix(f"{FORGOTTEN}/")
    if back.split("/", 1)[0] not in NOTE_DIRS:
        raise MemoryPathError(f"{path!r}: only forgotten knowledge and procedures are restored")
    target = memory_path(folder, back)
    if not source.is_file():
        raise FileNotFoundError(f"no forgotten note {relative!r}")
    if target.exists():
        raise FileExistsError(f"{back!r} exists: move it away first")
    meta, body = read_document(source)
    meta.pop("forgotten", None)
    meta["restored"] = iso(now)  # the 90 days start again
    write_document(target, meta, body.strip() + "\n")
    source.unlink()
    return back
