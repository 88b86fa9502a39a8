"""Fixtures shared by the store tests (the database fixtures live in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.store.outbox_helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """The outbox tests' clock, at START (test_tasks.py has its own `clock`)."""
    return FakeClock()
