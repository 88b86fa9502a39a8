"""One-time credentials used at the same moment (hub/people/credentials.py), on SQLite and
PostgreSQL:
a `/link` code sent from two places at once links once, and a sign-in link opened by two
requests at once opens one session. Threads, each with its own connection, released
together."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from hub.messages import utcnow
from hub.people.credentials import Access, Refused, SignInRefused
from hub.store.db import Database
from hub.store.models import CredentialKind, Person

T = TypeVar("T")
RACERS = 8


def at_once(call: Callable[[], T]) -> list[T | None]:
    """`call` from RACERS threads released together; None where it raised `SignInRefused`
    for a link already used."""
    start = threading.Barrier(RACERS)

    def race() -> T | None:
        start.wait()
        try:
            return call()
        except SignInRefused as exc:
            assert exc.reason is Refused.USED
            return None

    with ThreadPoolExecutor(RACERS) as pool:
        return list(pool.map(lambda _: race(), range(RACERS)))


def with_dana(db: Database) -> Access:
    with db.session() as session:
        session.add(Person(id="dana", display_name="Dana"))
    return Access(db, utcnow)


def test_a_link_code_sent_from_two_places_at_once_links_once(db: Database) -> None:
    access = with_dana(db)
    access.create_link("dana", "7KQ2MX4P", "a DM on telegram")
    won = [r for r in at_once(lambda: access.use_code(CredentialKind.LINK, "7KQ2MX4P")) if r]
    assert won == [("dana", "a DM on telegram")]
    assert access.use_code(CredentialKind.LINK, "7KQ2MX4P") is None


def test_a_sign_in_link_opened_twice_at_once_opens_one_session(db: Database) -> None:
    access = with_dana(db)
    link = access.create_signin("dana")
    opened = [s for s in at_once(lambda: access.redeem_signin(link.secret)) if s is not None]
    assert len(opened) == 1
    assert [s.id for s in access.listing(CredentialKind.SESSION, "dana")] == [opened[0].id]
