"""The contract suite runs once per platform; each provides `tests/contract/<p>_harness.py`
with `open_harness(tmp_path, *, platform_down=False, ...)`, an async context manager
yielding a `Harness`, and `WRONG_CREDENTIALS`, the `open_harness` arguments that configure
the hub with a token the fake refuses. A case takes `harness` (opened as usual) or `opener`
(to open it down at start or with wrong credentials).

Not every platform has every feature (LINE has no edits, threads or message edits; a
Telegram webhook carries no timestamp to replay). A case that needs one says so with
`@pytest.mark.needs("feature", ...)` and is generated only for the platforms that have it,
so nothing is skipped: the case simply does not exist where the platform cannot do it.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from tests.contract.harness import Harness, Opener

# What each platform can do, as far as the contract cases are concerned:
# edits: the platform delivers edits of a person's message; threads: replies can be put in
# a thread (or forum topic); streaming: a reply is previewed by posting one message and
# editing it; drafts: a reply being written is shown without posting anything (Telegram's
# drafts in a private chat, "typing…" in a group);
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
    "telegram": frozenset({"edits", "threads", "drafts", "mention_routing", "captions"}),
}
PLATFORMS = tuple(FEATURES)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    needed: set[str] = set()
    for marker in metafunc.definition.iter_markers("needs"):
        needed.update(marker.args)
    platforms = [p for p in PLATFORMS if needed <= FEATURES[p]]
    for name in ("harness", "opener"):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, platforms, indirect=True)


@pytest.fixture
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    module = importlib.import_module(f"tests.contract.{request.param}_harness")
    async with module.open_harness(tmp_path) as opened:
        yield opened


@pytest.fixture
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    module = importlib.import_module(f"tests.contract.{request.param}_harness")

    def open_harness(
        *, platform_down: bool = False, wrong_credentials: bool = False
    ) -> AbstractAsyncContextManager[Harness]:
        wrong = dict(module.WRONG_CREDENTIALS) if wrong_credentials else {}
        opened: AbstractAsyncContextManager[Harness] = module.open_harness(
            tmp_path, platform_down=platform_down, **wrong
        )
        return opened

    return open_harness
