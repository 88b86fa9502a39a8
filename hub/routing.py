"""Which Anima answers: mention > thread > channel binding > DM default > hub default.

The two defaults apply only to messages addressed to the hub (a DM, a mention of the bot,
the web chat): other channel chatter is answered only by a named, threaded or bound Anima.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from sqlmodel import col, select

from hub.identity import PersonView
from hub.messages import AddressKind, Inbound
from hub.store.db import Database
from hub.store.models import ChannelBinding, Turn

_MENTION_RE = re.compile(r"(?:^|[\s(])@([a-z][a-z0-9_-]{0,31})\b", re.IGNORECASE)
_VOCATIVE_RE = re.compile(r"^\s*([a-z][a-z0-9_-]{0,31})\s*[,:]", re.IGNORECASE)


def mentioned(inbound: Inbound, animas: Collection[str]) -> str | None:
    """The first Anima the adapter reported as mentioned, or named as `@name` / `name:`."""
    for name in inbound.mentions:
        if name in animas:
            return name
    for match in (*_MENTION_RE.finditer(inbound.text), _VOCATIVE_RE.match(inbound.text)):
        if match is not None and match.group(1).lower() in animas:
            return match.group(1).lower()
    return None


class Router:
    def __init__(self, db: Database, default_anima: str) -> None:
        self._db = db
        self._default = default_anima

    def route(self, inbound: Inbound, person: PersonView, animas: Collection[str]) -> str | None:
        by_mention = mentioned(inbound, animas)
        if by_mention:
            return by_mention
        address = inbound.address
        with self._db.session() as session:
            if address.thread or address.kind is AddressKind.DM:
                last = session.exec(
                    select(Turn.anima)
                    .where(Turn.conversation == str(address))
                    .order_by(col(Turn.id).desc())
                    .limit(1)
                ).first()
                if last in animas:
                    return last
            binding = session.get(ChannelBinding, address.channel_key)
        if binding is not None and binding.anima in animas:
            return binding.anima
        if not inbound.addressed:
            return None  # channel chatter that was not meant for an Anima
        if address.kind is AddressKind.DM and person.default_anima in animas:
            return person.default_anima
        if self._default in animas:
            return self._default
        return None
