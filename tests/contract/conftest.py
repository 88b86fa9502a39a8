"""The contract suite runs once per platform; each provides `tests/contract/<p>_harness.py`
with `open_harness(tmp_path)`, an async context manager yielding a `Harness`."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.contract.harness import Harness

PLATFORMS = ("slack", "discord")


@pytest.fixture(params=PLATFORMS)
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    module = importlib.import_module(f"tests.contract.{request.param}_harness")
    async with module.open_harness(tmp_path) as opened:
        yield opened
