"""What a person shares of their own words: a copy in the scope `shared:person:<id>`
(docs/memory.md "Sharing what you said").

What someone says in a DM stays theirs (`person:<id>`). Sharing it is their explicit act
(`/share`, "share that with the team", the dashboard, MCP `memory_write` with `share`), and
it never changes the private item: it writes a copy, the person's own words only (never the
Anima's reply, which may hold what it inferred about others), encoded like any memory text.

The copy's scope names whose words they are, so everything that keeps scopes keeps this
one: a session or weekly summary, a note the daily stage files from it, an archived day
(hub/memory/consolidation.py and the stages it runs), and forgetting the person finds every
copy by it (`with_shared`, hub/memory/erase.py). Who may recall it is its `audience`:
everyone, as for `shared`. The index keeps the audience as the point's scope, so the privacy
filter inside the engine (`RecallScope.filter_scopes`) needs no new case.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from hub.memory.documents import (
    Layer,
    MemoryItem,
    episode_path,
    importance_of,
    stable_id,
)
from hub.plaintext import one_line
from hub.redaction.redact import redact

SHARED = "shared"
PERSON = "person:"
SHARED_BY = f"{SHARED}:{PERSON}"  # + the person's id
SHARED_WHERE = "shared with the team"  # the copy's place in its speaker label


def shared_scope(person_id: str) -> str:
    """The scope of what `person_id` shared of their own words."""
    return f"{SHARED_BY}{person_id}"


def sharer(scope: str) -> str | None:
    """Whose words an item of this scope is, when they shared it; else None."""
    if not scope.startswith(SHARED_BY):
        return None
    return scope.removeprefix(SHARED_BY) or None


def audience(scope: str) -> str:
    """The scope recall filters an item by: what a person shared is `shared`."""
    return SHARED if sharer(scope) else scope


def with_shared(scopes: Iterable[str]) -> set[str]:
    """`scopes` and, for each person's scope, what that person shared: forgetting a person
    erases both."""
    given = set(scopes)
    return given | {f"{SHARED}:{s}" for s in given if s.startswith(PERSON)}


def shared_label(name: str) -> str:
    """The speaker label a shared copy opens with (one line: a name cannot start another)."""
    return f"**{one_line(name)}** ({SHARED_WHERE}): "


def shared_id(person_id: str, key: str) -> str:
    """The id of the copy one act (`key`) of `person_id` makes."""
    return stable_id("shared", person_id, key)


def shared_item(person_id: str, name: str, words: str, key: str, at: datetime) -> MemoryItem:
    """The shared copy of `words`, said by `person_id` (named `name`), as an episode section
    of the day it is shared. `key` makes it idempotent: the same act shares once."""
    said = redact(words.strip())[0]
    return MemoryItem(
        id=shared_id(person_id, key),
        layer=Layer.EPISODIC,
        text=shared_label(name) + said,
        path=episode_path(at.date()),
        scope=shared_scope(person_id),
        created=at,
        updated=at,
        person=person_id,
        channel=None,
        importance=importance_of(said, 0.0),
        section=at.strftime("%H:%M"),
    )
