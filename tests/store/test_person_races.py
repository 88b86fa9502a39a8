"""Two hub workers making someone at once (docs/scale.md, first-sight races), on the real
PostgreSQL: naming someone new (`user=alice` in a web chat request) and the owner at a
fresh database's first start each make one person, not one per worker."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from hub.people.identity import OWNER, IdentityService, PersonView
from hub.store.db import Database

pytestmark = pytest.mark.postgres


def worker(db: Database, home: Path) -> IdentityService:
    return IdentityService(Database(db.url), home / "users", [], "UTC", "en", "Olivia")


def meanwhile(
    identity: IdentityService, other: Callable[[], PersonView]
) -> tuple[list[PersonView], list[threading.Thread]]:
    """Run `other` (the other worker) in a thread just before `identity` makes its person;
    give it a second, then let this one go on. What the other got, and its thread."""
    create = identity.create
    got: list[PersonView] = []
    threads: list[threading.Thread] = []

    def create_late(name: str, by: str) -> PersonView:
        thread = threading.Thread(target=lambda: got.append(other()))
        threads.append(thread)
        thread.start()
        thread.join(timeout=1.0)  # with the lock, it waits for this worker's person
        return create(name, by)

    identity.create = create_late  # type: ignore[method-assign]
    return got, threads


def test_naming_someone_new_on_two_workers_at_once_makes_one_person(
    pg: Database, tmp_path: Path
) -> None:
    a, b = worker(pg, tmp_path), worker(pg, tmp_path)
    got, threads = meanwhile(a, lambda: b.named("alice", "owner:x"))
    mine = a.named("alice", "owner:x")
    [other] = threads
    other.join(timeout=10)
    assert [p.id for p in got] == [mine.id]
    assert [p.display_name for p in a.everyone()].count("alice") == 1


def test_two_workers_starting_on_a_fresh_database_make_one_owner(
    pg: Database, tmp_path: Path
) -> None:
    a, b = worker(pg, tmp_path), worker(pg, tmp_path)
    got, threads = meanwhile(a, b.owner)
    mine = a.owner()
    [other] = threads
    other.join(timeout=10)
    assert [p.id for p in got] == [mine.id]
    assert sum(OWNER in p.roles for p in a.everyone()) == 1
