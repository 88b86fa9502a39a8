"""Forgetting a person in an Anima's markdown, in every copy of what they said
(hub/people/erasure.py
forgets them everywhere else).

Their items go wherever consolidation copied them: the sections of the episode days, of the
days' copies the weekly stage moved to `archive/episodes/`, the summaries the session and
weekly stages wrote under their scope, and the notes filed from them (active, retired by
a merge or a newer fact, or in `archive/forgotten/`, which a restore would bring back).
Every copy carries the scope of what it was made from, so the scope is what finds them.
"""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from hub.markdown_files import read_document
from hub.memory.documents import (
    ARCHIVED_EPISODES,
    LAYER_DIRS,
    UNREADABLE,
    is_episode_file,
    is_retired,
    read_episodes,
    rewrite_episodes,
    stable_id,
)
from hub.memory.sharing import with_shared

log = logging.getLogger(__name__)


def forget_in(folder: Path, scopes: set[str], until: datetime | None = None) -> list[str]:
    """Remove the items under `scopes` from an Anima's markdown, every copy of them; with
    `until`, only those written by then (a forget applied again at start spares what the
    person said after it). A person's scope takes what they shared with it
    (hub/memory/sharing.py). The ids removed that the index may hold."""
    scopes = with_shared(scopes)
    removed = _forget_sections(folder, scopes, until)
    recallable = tuple(LAYER_DIRS.values())
    for path in sorted(folder.glob("*/**/*.md")):
        relative = path.relative_to(folder).as_posix()
        if is_episode_file(relative) or not path.is_file():
            continue
        try:
            meta, _body = read_document(path)
        except UNREADABLE:
            continue  # not a note the hub could read: nothing it wrote
        if str(meta.get("scope") or "shared") not in scopes or not _by(meta, until):
            continue
        if relative.split("/", 1)[0] in recallable and not is_retired(meta):
            removed.append(str(meta.get("id") or stable_id(relative, "")))
        path.unlink()
    return removed


def _forget_sections(folder: Path, scopes: set[str], until: datetime | None) -> list[str]:
    """Their sections, from each day and each archived day; the ids of the days' own
    (archived copies are never indexed)."""
    removed: list[str] = []
    days = sorted((folder / "episodes").glob("*.md"))
    for path in [*days, *sorted((folder / ARCHIVED_EPISODES).glob("*.md"))]:
        relative = path.relative_to(folder).as_posix()
        try:
            items = read_episodes(folder, path)
        except UNREADABLE as exc:  # said loudly: this file may still hold what they said
            log.error("%s cannot be read, so nothing in it was forgotten: %s", relative, exc)
            continue
        going = [i for i in items if i.scope in scopes and (until is None or i.created <= until)]
        if not going:
            continue
        gone = {i.id for i in going}
        rewrite_episodes(folder, relative, [i for i in items if i.id not in gone])
        if relative.startswith("episodes/"):
            removed.extend(i.id for i in going)
    return removed


def _by(meta: dict[str, Any], until: datetime | None) -> bool:
    """Whether a note was written by `until` (one whose time is unknown counts as such)."""
    if until is None:
        return True
    created = meta.get("created")
    if isinstance(created, str):
        try:
            created = datetime.fromisoformat(created)
        except ValueError:
            return True
    if isinstance(created, date) and not isinstance(created, datetime):
        created = datetime(created.year, created.month, created.day)
    if not isinstance(created, datetime):
        return True
    return (created if created.tzinfo else created.replace(tzinfo=UTC)) <= until


def drop_set_aside(home: Path) -> None:
    """Indexes set aside as unreadable (hub/memory/service.py `_open_edge`) hold copies of
    what was forgotten, and the markdown rebuilt what is still remembered: they go."""
    for aside in sorted(home.glob("index.broken-*")):
        log.warning("deleting %s, an index set aside, with what was forgotten in it", aside)
        try:
            shutil.rmtree(aside)
        except OSError as exc:  # said, not raised: the forget itself is done
            log.error("%s could not be deleted (%s): delete it by hand", aside, exc)
