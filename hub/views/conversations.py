"""Conversations on every platform, from the turn log: the dashboard's list and transcript.

A conversation is a turn's `conversation`, the address it was held at: a thread, a web chat
session, a channel (`hub/messages.py` `Address`). The turn log holds what was answered, both
sides redacted; the inbox says what kind of place it is (a DM or not), which the address
alone does not. Who may see one is the caller's business (`took_part`): a person sees the
conversations they said something in, as the platform showed them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import ColumnElement, Connection, func, select
from sqlmodel import col

from hub.messages import Address, AddressKind
from hub.store.db import Database
from hub.store.models import InboxItem, Turn

EXCERPT = 140
# A note in place of a reply, "_(answered in offline mode)_" (hub/memory/text.py): LIKE's own
# "_" escaped, so the pattern is an underscore, "(", anything, ")", an underscore.
_NOTE_LIKE = "\\_(%)\\_"
NameOf = Callable[[str], str]
"""The display name of the person with this id (`IdentityService.by_id`)."""


@dataclass(frozen=True, slots=True)
class Filters:
    anima: str = ""  # an Anima answered in it
    platform: str = ""
    channel: str = ""  # part of the channel's name or id, `#general` or `general`
    text: str = ""  # words someone said in it (case-insensitive)
    # Each group: someone with one of these ids said something in it (a person's own ids
    # for their view, the `person` filter's for an admin's).
    took_part: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class Place:
    key: str
    platform: str
    kind: str  # dm | channel | thread
    label: str  # "DM with Dana on slack", "#general on web"
    people: tuple[str, ...]  # names of the people who spoke in it


@dataclass(frozen=True, slots=True)
class Summary:
    place: Place
    anima: str  # the Anima of its latest turn
    last_at: datetime
    last_text: str  # an excerpt
    turns: int


@dataclass(frozen=True, slots=True)
class Line:
    role: str  # user | assistant
    author: str
    text: str
    at: datetime
    anima: str


@dataclass(frozen=True, slots=True)
class Transcript:
    place: Place
    lines: list[Line] = field(default_factory=list)


def listing(db: Database, filters: Filters, limit: int, name_of: NameOf) -> list[Summary]:
    """The conversations that match, the latest active first."""
    last, count = func.max(col(Turn.id)), func.count()
    query = (
        select(col(Turn.conversation), last, count)
        .where(*_conditions(filters))
        .group_by(col(Turn.conversation))
        .order_by(last.desc())
        .limit(limit)
    )
    with db.engine.connect() as conn:
        found = conn.execute(query).all()
        keys = [key for key, _, _ in found]
        lasts = conn.execute(
            select(col(Turn.id), col(Turn.anima), col(Turn.text), col(Turn.created_at)).where(
                col(Turn.id).in_([last_id for _, last_id, _ in found])
            )
        ).all()
        said = _last_said(conn, keys)
        places = _places(conn, keys, name_of)
    latest = {row.id: row for row in lasts}
    return [
        Summary(
            places[key],
            latest[last_id].anima,
            latest[last_id].created_at,
            excerpt(said.get(key, latest[last_id].text)),
            int(turns),
        )
        for key, last_id, turns in found
    ]


def transcript(db: Database, key: str, limit: int, name_of: NameOf) -> Transcript | None:
    """The conversation's latest `limit` turns, oldest first; None when it has none."""
    with db.engine.connect() as conn:
        rows = conn.execute(
            select(Turn)
            .where(col(Turn.conversation) == key)
            .order_by(col(Turn.id).desc())
            .limit(limit)
        ).all()
        if not rows:
            return None
        place = _places(conn, [key], name_of)[key]
    lines = [Line(r.role, r.author, r.text, r.created_at, r.anima) for r in reversed(rows)]
    return Transcript(place, lines)


def took_part(db: Database, key: str, person_ids: Collection[str]) -> bool:
    """Whether one of these ids (a person and those merged into them) spoke in it."""
    with db.engine.connect() as conn:
        found = conn.execute(
            select(col(Turn.id))
            .where(col(Turn.conversation) == key, col(Turn.person_id).in_(list(person_ids)))
            .limit(1)
        ).first()
    return found is not None


def answered_since(db: Database, since: Mapping[str, datetime]) -> dict[str, int]:
    """How many turns each Anima answered since its own moment (its local midnight)."""
    animas_at: dict[datetime, list[str]] = {}
    for anima, moment in since.items():
        animas_at.setdefault(moment, []).append(anima)
    counts: dict[str, int] = {}
    with db.engine.connect() as conn:
        for moment, animas in animas_at.items():  # one query per timezone, not per Anima
            rows = conn.execute(
                select(col(Turn.anima), func.count())
                .where(col(Turn.role) == "assistant", col(Turn.anima).in_(animas))
                .where(col(Turn.created_at) >= moment)
                .group_by(col(Turn.anima))
            ).all()
            counts.update({anima: int(n) for anima, n in rows})
    return {anima: counts.get(anima, 0) for anima in since}


def excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 1] + "…"


# helpers --------------------------------------------------------------------------------


def _last_said(conn: Connection, keys: Sequence[str]) -> dict[str, str]:
    """Each conversation's last turn that says something: an offline answer's turn holds only
    a note in place of a reply (`_(answered in offline mode)_`), so the person's message
    before it is what the conversation last said."""
    last = func.max(col(Turn.id))
    ids = (
        select(last)
        .where(col(Turn.conversation).in_(keys), col(Turn.text).not_like(_NOTE_LIKE, "\\"))
        .group_by(col(Turn.conversation))
    )
    rows = conn.execute(
        select(col(Turn.conversation), col(Turn.text)).where(col(Turn.id).in_(ids))
    ).all()
    return {key: text for key, text in rows}


def _conditions(filters: Filters) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if filters.platform:
        conditions.append(col(Turn.channel_key).startswith(f"{filters.platform}:", autoescape=True))
    if channel := filters.channel.strip().lstrip("#").lower():
        # The channel is what follows the workspace's "/" in the channel key.
        conditions.append(func.lower(col(Turn.channel_key)).like(f"%/%{_like(channel)}%", "\\"))
    if filters.anima:
        conditions.append(_has(col(Turn.anima) == filters.anima))
    if filters.text:
        said = func.lower(col(Turn.text)).contains(filters.text.lower(), autoescape=True)
        conditions.append(_has(said))
    for ids in filters.took_part:
        conditions.append(_has(col(Turn.person_id).in_(list(ids))))
    return conditions


def _has(condition: ColumnElement[bool]) -> ColumnElement[bool]:
    """The conversation has a turn for which `condition` holds."""
    # correlate(None): the subquery reads the turn table on its own, not the outer row.
    some = select(col(Turn.conversation)).where(condition).correlate(None)
    return col(Turn.conversation).in_(some)


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _places(conn: Connection, keys: Sequence[str], name_of: NameOf) -> dict[str, Place]:
    kinds = dict(
        conn.execute(
            select(col(InboxItem.conversation), func.min(col(InboxItem.address_kind)))
            .where(col(InboxItem.conversation).in_(keys))
            .group_by(col(InboxItem.conversation))
        ).all()
    )
    spoke: dict[str, list[str]] = {}
    for key, person_id in conn.execute(
        select(col(Turn.conversation), col(Turn.person_id))
        .where(col(Turn.conversation).in_(keys), col(Turn.person_id).is_not(None))
        .group_by(col(Turn.conversation), col(Turn.person_id))
        .order_by(func.min(col(Turn.id)))
    ):
        spoke.setdefault(key, []).append(str(person_id))
    names: dict[str, str] = {}
    for ids in spoke.values():
        for person_id in ids:
            if person_id not in names:
                names[person_id] = name_of(person_id)
    return {
        key: _place(key, kinds.get(key), _unique(names[i] for i in spoke.get(key, [])))
        for key in keys
    }


def _place(key: str, address_kind: str | None, people: tuple[str, ...]) -> Place:
    try:
        address = Address.parse(key, address_kind or AddressKind.CHANNEL)
    except ValueError:  # not an address the hub wrote; shown as it is
        return Place(key, key.partition(":")[0], "channel", key, people)
    on = f"on {address.platform}"
    if address.kind is AddressKind.DM:
        label = f"DM with {', '.join(people)} {on}" if people else f"a DM {on}"
        return Place(key, address.platform, "dm", label, people)
    if address.thread:
        return Place(key, address.platform, "thread", f"thread in #{address.channel} {on}", people)
    return Place(key, address.platform, "channel", f"#{address.channel} {on}", people)


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))
