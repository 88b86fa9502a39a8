"""What of an Anima's folder a person may read through the memory API (REST
`GET /api/memory/{name}/read`, MCP `memory_read`; docs/memory.md "Browsing it").

A person reads memory items, one by one, each with the privacy scope it was written with:
an episode day's sections (and the same day's copy the weekly stage archived, which is
read the same way), and notes (knowledge, procedures, skills, and forgotten ones). Nothing
else of the folder is a memory item: `identity.md` (who the Anima is, its instructions),
`crons/*.md` (what it does on a schedule, and where it posts) and any other file outside
the memory layers are the Anima's configuration, which only the owner and admins manage,
so only they read them: none carries a privacy scope that could make a part of it a
person's or shared.
A memory file that cannot be parsed into items, each with its scope, is theirs alone too:
an episode section whose metadata names no scope (a notes file without `scope` is shared,
as docs/memory.md says), or a file the parser refuses, whose error would quote its text.
"""

from __future__ import annotations

from pathlib import Path

from hub.memory.documents import UNREADABLE, MemoryItem, is_episode_file, items_in

NOTE_FOLDERS = ("knowledge", "procedures", "skills")
FORGOTTEN_NOTES = tuple(f"archive/forgotten/{name}" for name in NOTE_FOLDERS)


class AdminOnly(PermissionError):
    """A file of the Anima's folder that only the owner and admins read: its message says
    why, and names nothing but the path the caller gave."""


def is_memory_file(relative: str) -> bool:
    """Whether a path (relative to the Anima's folder) holds memory items."""
    if is_episode_file(relative):
        return True
    folders = (*NOTE_FOLDERS, *FORGOTTEN_NOTES)
    return any(relative.startswith(f"{folder}/") for folder in folders)


def items_for_people(folder: Path, path: Path) -> list[MemoryItem]:
    """The items of a memory file, for a reader who sees them by scope. AdminOnly for a
    file that is not memory, or whose items cannot be read with their scopes;
    FileNotFoundError for a memory file that does not exist."""
    relative = path.relative_to(folder).as_posix()
    if not is_memory_file(relative):
        raise AdminOnly(
            f"{relative!r} is not a memory item: the Anima's own files (identity, crons) "
            "are read by the owner and admins"
        )
    try:  # a section of a day (or its archived copy) that names no scope: no one's to read
        return items_in(folder, path, scoped=True)
    except UNREADABLE:
        raise AdminOnly(
            f"{relative!r} cannot be read item by item, with each item's privacy scope: "
            "only the owner and admins read it"
        ) from None
