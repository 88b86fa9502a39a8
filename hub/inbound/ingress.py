"""Ingress: dedup by (platform, sender, event id) and persist every inbound before acting on it.

Who sent an event is part of its identity. A platform's signed event ids are its own, but a
web client chooses its `message_id`: keyed on the id alone, another person's id found that
person's row, and the adapter replayed their stored reply. Now a second sender with the same
id is a new event with a turn of its own, and a redelivery is only ever the sender's own row
(docs/reliability.md, "Dedup").
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, replace
from typing import Any

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from hub.adapter import MessageTooLarge
from hub.messages import (
    Address,
    Attachment,
    Command,
    Inbound,
    PlatformUser,
    clean_json,
    clean_text,
    has_surrogate,
)
from hub.store.db import Database, row_values
from hub.store.models import InboxItem

_INSERT = insert(InboxItem)  # built once: every message passes here


class Ingress:
    def __init__(self, db: Database, max_message_bytes: int) -> None:
        self._db = db
        self.max_message_bytes = max_message_bytes

    def check_size(self, text: str) -> None:
        size = len(text.encode("utf-8"))
        if size > self.max_message_bytes:
            raise MessageTooLarge(size, self.max_message_bytes)

    def accept(self, inbound: Inbound) -> tuple[InboxItem, bool]:
        """Persist the event; return its row and whether this sender had sent it before."""
        self.check_size(inbound.text)
        row = to_row(inbound)
        try:
            with self._db.write() as conn:
                conn.execute(_INSERT, [row_values(row)])
            return row, False
        except IntegrityError as exc:
            refused = exc  # the unique (platform, sender_key, event_id) constraint: a redelivery
        with self._db.session() as session:
            existing = session.exec(
                select(InboxItem).where(
                    InboxItem.platform == row.platform,
                    InboxItem.sender_key == row.sender_key,
                    InboxItem.event_id == row.event_id,
                )
            ).first()
        if existing is None:
            raise refused  # another constraint refused the row: say which, not "no row"
        return existing, True


def _clean(text: str) -> str:
    return clean_text(text.replace("\x00", ""))


def storable(inbound: Inbound) -> Inbound:
    """The event without NUL characters or surrogate code points in its text fields:
    PostgreSQL refuses a NUL in a text column (a message with one failed with a 500, and
    every redelivery with it), no platform means anything by one; a lone surrogate
    (JSON "\\ud800") cannot be encoded at all, and stalled Telegram polling for everyone.
    A surrogate becomes U+FFFD (hub/messages.py `clean_text`), in `raw` too."""
    a, s, c = inbound.address, inbound.sender, inbound.command
    fields = (
        inbound.event_id,
        inbound.text,
        inbound.reply_to or "",
        inbound.edit_of or "",
        str(a),
        s.user_id,
        s.display_name,
        *inbound.mentions,
        *(f"{x.name}{x.url}{x.content_type}" for x in inbound.attachments),
        *((c.name, *c.args) if c else ()),
    )
    if _raw_unencodable(inbound.raw):
        inbound = replace(inbound, raw=clean_json(inbound.raw))
    if not any("\x00" in field or has_surrogate(field) for field in fields):
        return inbound
    return replace(
        inbound,
        event_id=_clean(inbound.event_id),
        address=Address(
            a.platform,
            _clean(a.workspace),
            _clean(a.channel),
            _clean(a.thread) if a.thread else a.thread,
            a.kind,
        ),
        sender=PlatformUser(s.platform, _clean(s.user_id), _clean(s.display_name), s.is_bot),
        text=_clean(inbound.text),
        mentions=tuple(_clean(m) for m in inbound.mentions),
        reply_to=_clean(inbound.reply_to) if inbound.reply_to else inbound.reply_to,
        edit_of=_clean(inbound.edit_of) if inbound.edit_of else inbound.edit_of,
        attachments=tuple(
            replace(x, name=_clean(x.name), url=_clean(x.url), content_type=_clean(x.content_type))
            for x in inbound.attachments
        ),
        command=Command(_clean(c.name), tuple(_clean(x) for x in c.args)) if c else None,
    )


def _raw_unencodable(raw: dict[str, Any]) -> bool:
    try:
        json.dumps(raw, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    except (TypeError, ValueError):
        return False  # not JSON at all: the store says so, as before
    return False


def to_row(inbound: Inbound) -> InboxItem:
    address = inbound.address
    return InboxItem(
        id=str(uuid.uuid4()),
        platform=address.platform,
        event_id=inbound.event_id,
        address=str(address),
        conversation=str(address),
        channel_key=address.channel_key,
        address_kind=address.kind.value,
        sender_key=inbound.sender.key,
        sender_name=inbound.sender.display_name,
        sender_is_bot=inbound.sender.is_bot,
        text=inbound.text,
        mentions=list(inbound.mentions),
        reply_to=inbound.reply_to,
        edit_of=inbound.edit_of,
        addressed=inbound.addressed,
        attachments=[asdict(a) for a in inbound.attachments],
        raw=inbound.raw,
        received_at=inbound.sent_at,
    )


def from_row(row: InboxItem) -> Inbound:
    """Rebuild the normalized message from its inbox row (used after a restart)."""
    platform, _, user_id = row.sender_key.partition(":")
    return Inbound(
        event_id=row.event_id,
        address=Address.parse(row.address, row.address_kind),
        sender=PlatformUser(platform, user_id, row.sender_name, row.sender_is_bot),
        text=row.text,
        mentions=tuple(row.mentions),
        reply_to=row.reply_to,
        edit_of=row.edit_of,
        addressed=row.addressed,
        attachments=tuple(Attachment(**a) for a in row.attachments),
        sent_at=row.received_at,
        raw=row.raw,
    )
