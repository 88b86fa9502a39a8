"""The contract suite runs once per platform; each provides `tests/contract/<p>_harness.py`
with `open_harness(tmp_path)`, an async context manager yielding a `Harness`.

Not every platform has every feature (LINE has no edits, threads or message edits; a
Telegram webhook carries no timestamp to replay). A case that needs one says so with
`@pytest.mark.needs("feature", ...)` and is generated only for the platforms that have it,
so nothing is skipped: the case simply does not exist where the platform cannot do it.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.contract.harness import Harness

# What each platform can do, as far as the contract cases are concerned:
# edits: the platform delivers edits of a person's message; threads: replies can be put in
# a thread (or forum topic); streaming: a reply can be previewed by editing one message;
# replay_window: signed requests carry a timestamp, so a stale replay is refusable;
# mention_routing: a channel message can mention the bot, and chatter without it is ignored;
# captions: one message carries both text and a file (a LINE message is one or the other).
FEATURES: dict[str, frozenset[str]] = {
    "slack": frozenset(
        {"edits", "threads", "streaming", "replay_window", "mention_routing", "captions"}
    ),
    "discord": frozenset(
        {"edits", "threads", "streaming", "replay_window", "mention_routing", "captions"}
    ),
    "line": frozenset({"mention_routing"}),
    # Telegram has captions, but the attachment case compares a file URL and Telegram gives
    # file ids only (telegram-file:<id>): tests/adapters/telegram covers its attachments.
    "telegram": frozenset({"edits", "threads", "streaming", "mention_routing"}),
}
PLATFORMS = tuple(FEATURES)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "harness" not in metafunc.fixturenames:
        return
    needed: set[str] = set()
    for marker in metafunc.definition.iter_markers("needs"):
        needed.update(marker.args)
    platforms = [p for p in PLATFORMS if needed <= FEATURES[p]]
    metafunc.parametrize("harness", platforms, indirect=True)


@pytest.fixture
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    module = importlib.import_module(f"tests.contract.{request.param}_harness")
    async with module.open_harness(tmp_path) as opened:
        yield opened
