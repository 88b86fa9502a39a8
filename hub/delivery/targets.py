"""Where a heartbeat, a cron or a report posts: targets as written, resolved at run time.

A target is written in `post_to:` (crons/*.md) or `[heartbeat] channels` (anima.toml) as

- an address, `platform:workspace/channel[#thread]` (what `/whoami` calls "this
  conversation"), e.g. `telegram:123456/-1001234567890#42`, `line:Ubot…/Cgroup…`;
- a person's direct conversation, `dm:<platform>:<user id>`, e.g. `dm:telegram:123456789`,
  `dm:line:U4af…`, `dm:web:alice`: the most recent DM that person had on that platform
  (with this Anima when there is one, else with any), found in the inbox. A bot may not
  write first on most platforms, so there is none until the person has written once.

Resolving learns each target's kind from the inbox (a pasted DM address is a DM) and, for a
DM, whose it is: a post to a DM is made and remembered in that person's scope (DESIGN §7.4),
a post to channels in theirs. A target that cannot be resolved is returned with its reason,
so the caller records the failure visibly. Platform-neutral: nothing here knows a platform.

Posting to resolved targets (`post_to`) is the one way a heartbeat, a cron and a task's
report or notice reach them: each target its delivery under the run's key, or its failure
recorded.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, case, select
from sqlmodel import col

from hub.delivery.deliveries import bounded_key
from hub.delivery.outbox import Outbox
from hub.memory.recall import RecallScope
from hub.messages import Address, AddressKind, DeliveryKind
from hub.people.identity import PersonView
from hub.store.db import Database
from hub.store.models import Identity, InboxItem, Person

log = logging.getLogger(__name__)
DM_PREFIX = "dm:"
_DM_RE = re.compile(r"^dm:(?P<platform>[a-z0-9_-]+):(?P<user>[^\s,/#]+)$")
_CHANNELS = "channels"  # the group key of every target that is not a DM


@dataclass(frozen=True, slots=True)
class DirectTarget:
    """`dm:<platform>:<user id>`: a person's direct conversation, found when posting."""

    platform: str
    user_id: str

    def __str__(self) -> str:
        return f"{DM_PREFIX}{self.platform}:{self.user_id}"


Target = Address | DirectTarget


def parse_target(text: str) -> Target:
    """A target as written; ValueError with an example of both forms when it is neither."""
    text = text.strip()
    if text.startswith(DM_PREFIX) and "/" not in text:
        match = _DM_RE.match(text)
        if match is None:
            raise ValueError(
                f"not a direct-conversation target: {text!r} (expected dm:<platform>:<user id>, "
                "e.g. 'dm:telegram:123456789')"
            )
        return DirectTarget(match["platform"], match["user"])
    try:
        return Address.parse(text)
    except ValueError:
        raise ValueError(
            f"not an address: {text!r} (expected platform:workspace/channel such as "
            "'web:local/general', or dm:<platform>:<user id> such as 'dm:telegram:123456789')"
        ) from None


@dataclass(frozen=True, slots=True)
class Resolved:
    """One target at posting time: where it goes and whose it is, or why it cannot go."""

    written: str
    address: Address | None = None
    person: PersonView | None = None  # set for a DM: the person it belongs to
    error: str = ""

    @property
    def written_kind(self) -> AddressKind:
        """The kind the target is written as (for recording one that cannot be reached)."""
        return AddressKind.DM if self.written.startswith(DM_PREFIX) else AddressKind.CHANNEL

    @property
    def is_dm(self) -> bool:
        return self.address is not None and self.address.kind is AddressKind.DM

    @property
    def group(self) -> str:
        """Targets of one group share one privacy scope (and one text): each person's DMs
        are a group of their own, every other target is in the channels group."""
        return f"person:{self.person.id}" if self.is_dm and self.person else _CHANNELS


def groups(targets: Iterable[Resolved]) -> list[list[Resolved]]:
    """The resolved targets by privacy scope, in the order they were written."""
    grouped: dict[str, list[Resolved]] = {}
    for target in targets:
        if target.address is not None:
            grouped.setdefault(target.group, []).append(target)
    return list(grouped.values())


def scope_of(anima: str, group: Sequence[Resolved]) -> RecallScope:
    """The privacy scope of a post to these targets: a person's DMs see and keep that
    person's scope; one channel its channel; several channels only what is shared."""
    first = group[0]
    assert first.address is not None
    if first.is_dm and first.person is not None:
        return RecallScope(anima, first.person.id, first.address.channel_key, True)
    if len(group) == 1:
        return RecallScope(anima, None, first.address.channel_key, False)
    return RecallScope(anima, None, None, False)


@dataclass(frozen=True, slots=True)
class Post:
    """One text for resolved targets: who posts it, as what, under which key (a target's
    delivery key is `<key>><target>`, so a run posted again posts nothing twice), and the
    `label` a target's failed delivery is recorded with ("task 7", "not written")."""

    text: str
    kind: DeliveryKind
    poster: str
    key: str
    label: str


def post_to(conn: Connection, outbox: Outbox, post: Post, target: Resolved) -> bool:
    """Post to one target in the caller's transaction; True when it was enqueued. A target
    that could not be resolved is recorded as a failed delivery instead, visibly; its text
    says only what failed: what was written for other targets belongs to their scope (a DM
    briefing must not show up in another person's failed post)."""
    if target.address is not None:
        key = bounded_key(f"{post.key}>{target.address}")
        outbox.enqueue(conn, target.address, post.text, post.kind, post.poster, key)
        return True
    log.error(
        "%s: cannot post to %s: %s",
        post.key,
        target.written,
        target.error,
        extra={"anima": post.poster},
    )
    outbox.record_failed(
        conn,
        target.written,
        target.written_kind,
        f"({post.label}: {target.written} cannot be reached: {target.error})",
        post.kind,
        post.poster,
        bounded_key(f"{post.key}>{target.written}"),
        target.error or "cannot be reached",
    )
    return False


class TargetResolver:
    def __init__(self, db: Database) -> None:
        self._db = db

    def resolve(self, anima: str, written: Sequence[str]) -> list[Resolved]:
        resolved = []
        with self._db.engine.connect() as conn:
            for text in written:
                try:
                    target = parse_target(text)
                except ValueError as exc:
                    resolved.append(Resolved(text, error=str(exc)))
                    continue
                if isinstance(target, DirectTarget):
                    resolved.append(_direct(conn, anima, target))
                else:
                    resolved.append(_address(conn, target))
        return resolved


def _direct(conn: Connection, anima: str, target: DirectTarget) -> Resolved:
    own_first = case((col(InboxItem.anima) == anima, 0), else_=1)
    row = conn.execute(
        select(col(InboxItem.address), col(InboxItem.person_id), col(InboxItem.sender_name))
        .where(col(InboxItem.platform) == target.platform)
        .where(col(InboxItem.sender_key) == f"{target.platform}:{target.user_id}")
        .where(col(InboxItem.address_kind) == AddressKind.DM.value)
        .where(col(InboxItem.sender_is_bot).is_(False))
        .order_by(own_first, col(InboxItem.received_at).desc())
        .limit(1)
    ).first()
    if row is None:
        return Resolved(
            str(target),
            error=f"no direct conversation with {target.platform}:{target.user_id} yet: "
            f"they must write to the bot on {target.platform} once (e.g. /start) first",
        )
    address = Address.parse(row.address, AddressKind.DM)
    return _owned(conn, str(target), address, row.person_id, target.platform, target.user_id)


def _address(conn: Connection, address: Address) -> Resolved:
    """An address as written, with the kind and (for a DM) the person the inbox knows."""
    row = conn.execute(
        select(col(InboxItem.address_kind), col(InboxItem.person_id), col(InboxItem.sender_key))
        .where(col(InboxItem.channel_key) == address.channel_key)
        .where(col(InboxItem.sender_is_bot).is_(False))
        .order_by(col(InboxItem.received_at).desc())
        .limit(1)
    ).first()
    if row is None:
        return Resolved(str(address), address)  # nobody wrote there yet: a channel, as written
    kind = AddressKind(row.address_kind)
    typed = Address(address.platform, address.workspace, address.channel, address.thread, kind)
    if kind is not AddressKind.DM:
        return Resolved(str(address), typed)
    platform, _, user_id = str(row.sender_key).partition(":")
    return _owned(conn, str(address), typed, row.person_id, platform, user_id)


def _owned(
    conn: Connection,
    written: str,
    address: Address,
    person_id: str | None,
    platform: str,
    user_id: str,
) -> Resolved:
    """A DM target with its person: the inbox row's, else the identity's."""
    if person_id is None:
        person_id = conn.execute(
            select(col(Identity.person_id))
            .where(col(Identity.platform) == platform)
            .where(col(Identity.user_id) == user_id)
        ).scalar()
    person = conn.execute(select(Person).where(col(Person.id) == person_id)).first()
    if person is None:
        return Resolved(written, error=f"cannot tell whose direct conversation {address} is")
    view = PersonView(
        person.id,
        person.display_name,
        tuple(person.roles),
        person.timezone,
        person.language,
        person.default_anima,
    )
    return Resolved(written, address, view)
