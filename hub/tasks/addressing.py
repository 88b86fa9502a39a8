"""Who may send the hub's words where: the one check every target a turn asks for passes.

A model's tool call, a command or an API request that names a place to post (a task's
`report_to`, docs/tasks.md) names it on behalf of someone: the `Asker`. The hub posts there
only when that person may post there themselves, as far as the hub knows it:

- the conversation the turn is in (and, for a task's or a schedule's turn, the targets that
  task or schedule already posts to, which were checked or written by an admin);
- their own direct conversations: `dm:<platform>:<user id>` of an account linked to them, or
  the address of a DM they wrote in;
- a channel or group one of their accounts has written in (the inbox holds it). The hub
  sees no member lists, so "has written there" is what it can prove; a channel nobody of
  theirs wrote in, another person's DM, another platform they never used and a place that
  takes no messages (a Notion data source) are refused.

Anything else needs an admin (or the owner): they may name any target, and each one beyond
their own places is audited (`address.by_admin`). Nothing here reads the text people sent:
a target comes only from a tool's argument or a request's field, and text is never one.
The refusal names the target and the rule, never whose a place is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select
from sqlmodel import col

from hub.delivery.targets import DirectTarget, Target, parse_target
from hub.messages import Address
from hub.people.identity import OWNER
from hub.store.db import Database
from hub.store.models import AuditEntry, Identity, InboxItem, Person
from hub.tasks.board import TaskView

log = logging.getLogger(__name__)

ADMIN_AUDIT = "address.by_admin"
RULE = (
    "a turn may address only the conversation it is in, its person's own direct "
    "conversations (dm:<platform>:<their user id>) and channels they have written in; "
    "anything else needs a hub admin (see docs/tasks.md)"
)


class NotAllowed(ValueError):
    """A target the asker may not post to; its text is what the model (or caller) reads."""


@dataclass(frozen=True, slots=True)
class Asker:
    """Who asks the hub to post somewhere, and what is already theirs to address."""

    person_id: str | None  # None: a turn nobody asked for (a heartbeat, a cron)
    admin: bool  # an admin's (or the owner's) own turn or request: anything, audited
    where: str = ""  # the conversation the turn is in, as an address; "" for none
    granted: tuple[str, ...] = ()  # targets already allowed: a task's, a schedule's own
    anima: str = ""  # the Anima the words are posted as (for the audit)


class Addressing:
    def __init__(self, db: Database) -> None:
        self._db = db

    def check(self, asker: Asker, written: Sequence[str]) -> tuple[str, ...]:
        """The targets as written when `asker` may post to every one of them; NotAllowed
        naming the first that is not (ValueError for one that is not a target at all).
        An admin's targets beyond their own places are audited."""
        targets = [(text, parse_target(text)) for text in written]
        beyond = []
        with self._db.engine.connect() as conn:
            for text, target in targets:
                if not self._allowed(conn, asker, target):
                    if not asker.admin:
                        raise NotAllowed(f"cannot address {text}: {RULE}")
                    beyond.append(text)
        if beyond:
            self._audit(asker, beyond)
        return tuple(written)

    def refused(self, asker: Asker, written: Iterable[str]) -> dict[str, str]:
        """Of `written`, those `asker` may not post to (now), each with the reason."""
        out = {}
        with self._db.engine.connect() as conn:
            admin = asker.admin or _is_admin(conn, asker.person_id)
            for text in written:
                try:
                    target = parse_target(text)
                except ValueError as exc:
                    out[text] = str(exc)
                    continue
                if not admin and not self._allowed(conn, asker, target):
                    out[text] = f"not a place the person who asked may post: {RULE}"
        return out

    def refused_for_task(
        self, chain: Sequence[TaskView], configured: Callable[[str], list[str]]
    ) -> dict[str, str]:
        """As a task runs (`chain`: it, then the tasks above it): its `report_to` that the
        person who asked may not post to now. A task nobody asked for (a heartbeat's, a
        cron's) had its targets checked against the schedule's own as it was made; where
        the tasks above it and the Animas' anima.toml report was checked or admin-written."""
        if not chain or chain[0].requested_by is None or not chain[0].report_to:
            return {}
        task = chain[0]
        granted = [w for t in chain for w in (t.origin, *configured(t.assignee)) if w]
        granted += [w for t in chain[1:] for w in t.report_to]
        asker = Asker(task.requested_by, False, task.origin, tuple(granted), task.assignee)
        refused = self.refused(asker, task.report_to)
        for target, reason in refused.items():
            log.warning("task %d: not posting to %s: %s", task.id, target, reason)
        return refused

    def _allowed(self, conn: Connection, asker: Asker, target: Target) -> bool:
        if _same(target, asker.where) or any(_same(target, g) for g in asker.granted):
            return True
        if asker.person_id is None:
            return False
        accounts = _accounts(conn, asker.person_id)
        if isinstance(target, DirectTarget):
            return f"{target.platform}:{target.user_id}" in accounts
        return _wrote_in(conn, target, accounts)

    def _audit(self, asker: Asker, targets: list[str]) -> None:
        with self._db.session() as session:
            for target in targets:
                session.add(
                    AuditEntry(
                        actor=asker.person_id or "hub",
                        where=asker.where[:500],
                        action=ADMIN_AUDIT,
                        target=target[:300],
                        detail={"anima": asker.anima},
                    )
                )
            session.commit()


def _same(target: Target, other: str) -> bool:
    """One place: the same DM target, or an address in the same channel (any thread)."""
    if not other:
        return False
    try:
        parsed = parse_target(other)
    except ValueError:  # a task's conversation ("task:3") or a schedule's: no address
        return False
    if isinstance(target, DirectTarget) or isinstance(parsed, DirectTarget):
        return target == parsed
    return target.channel_key == parsed.channel_key


def _accounts(conn: Connection, person_id: str) -> set[str]:
    """The person's linked accounts as sender keys (`slack:U123`); merged persons' accounts
    were moved to them when they were merged (hub/people/linking.py)."""
    rows = conn.execute(
        select(col(Identity.platform), col(Identity.user_id)).where(
            col(Identity.person_id) == person_id
        )
    )
    return {f"{platform}:{user_id}" for platform, user_id in rows}


def _wrote_in(conn: Connection, address: Address, accounts: set[str]) -> bool:
    """Whether one of `accounts` has written in this channel (or DM): the inbox's record,
    not anything a message said."""
    if not accounts:
        return False
    found = conn.execute(
        select(col(InboxItem.id))
        .where(col(InboxItem.channel_key) == address.channel_key)
        .where(col(InboxItem.sender_key).in_(sorted(accounts)))
        .where(col(InboxItem.sender_is_bot).is_(False))
        .limit(1)
    ).first()
    return found is not None


def _is_admin(conn: Connection, person_id: str | None) -> bool:
    if person_id is None:
        return False
    roles = conn.execute(select(col(Person.roles)).where(col(Person.id) == person_id)).scalar()
    return "admin" in (roles or []) or OWNER in (roles or [])
