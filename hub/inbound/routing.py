"""Which Anima answers: mention > thread > channel binding > DM default > hub default.

The two defaults apply only to messages addressed to the hub (a DM, a mention of the bot,
the web chat): other channel chatter is answered only by a named, threaded or bound Anima.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlmodel import col, select

from hub.messages import AddressKind, Inbound, mentioned
from hub.people.identity import PersonView
from hub.store.db import Database
from hub.store.models import ChannelBinding, Turn


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
