"""Fixtures of the memory red team (tests/privacy/memory_world.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.privacy.memory_world import Served, serve


@pytest.fixture
async def served(home: Path, database_url: str) -> AsyncIterator[Served]:
    async with serve(home, database_url) as world:
        yield world
