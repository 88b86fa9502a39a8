"""Fixtures shared by the store tests (the database fixtures live in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hub.store.db import Database
from tests.conftest import postgres_url
from tests.store.outbox_helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """The outbox tests' clock, at START (test_tasks.py has its own `clock`)."""
    return FakeClock()


@pytest.fixture
def pg() -> Iterator[Database]:
    """A migrated hub database on PostgreSQL only (leases, LISTEN: PostgreSQL's)."""
    database = Database(postgres_url())
    database.migrate()
    try:
        yield database
    finally:
        database.dispose()


@pytest.fixture
def second(database_url: str, db: Database) -> Iterator[Database]:
    """The same database as `db`, through a second engine: another worker's connections."""
    other = Database(database_url)
    try:
        yield other
    finally:
        other.dispose()
