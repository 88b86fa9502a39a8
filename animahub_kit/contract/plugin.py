"""The contract's pytest plugin: the `harness` and `opener` fixtures, one run per platform.

A test module that runs the contract names its platforms in `CONTRACT_PLATFORMS`, a dict of
platform name to `ContractPlatform`, and takes the cases with
`from animahub_kit.contract.cases import *`; a case that takes `harness` or `opener` is then
generated once per platform (docs/adapters.md). Load the plugin with
`pytest_plugins = ["animahub_kit.contract.plugin"]` in the root conftest.py.

Not every platform has every feature (LINE has no edits, threads or message edits; a
Telegram webhook carries no timestamp to replay). A case that needs one says so with
`@pytest.mark.needs("feature", ...)` and is generated only for the platforms that have it,
so nothing is skipped: the case simply does not exist where the platform cannot do it.
The features (harness.FEATURES), as far as the cases are concerned:
- edits: the platform delivers edits of a person's message;
- threads: replies can be put in a thread (or forum topic);
- streaming: a reply is previewed by posting one message and editing it;
- drafts: a reply being written is shown without posting anything (Telegram's drafts in a
  private chat, "typing…" in a group);
- replay_window: signed requests carry a timestamp, so a stale replay is refusable;
- mention_routing: a channel message can mention the bot, and chatter without it is ignored;
- captions: one message carries both text and a file (a LINE message is one or the other).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import ModuleType

import pytest
import pytest_asyncio

from animahub_kit.contract.harness import ContractPlatform, Harness, Opener


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs(*features): a contract case generated only for platforms with these"
    )


def platforms_of(module: ModuleType | None) -> Mapping[str, ContractPlatform]:
    platforms: Mapping[str, ContractPlatform] | None = getattr(module, "CONTRACT_PLATFORMS", None)
    if not platforms:
        name = getattr(module, "__name__", module)
        raise pytest.UsageError(f"{name} takes a contract fixture but names no CONTRACT_PLATFORMS")
    return platforms


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    takes = [name for name in ("harness", "opener") if name in metafunc.fixturenames]
    if not takes:
        return
    needed: set[str] = set()
    for marker in metafunc.definition.iter_markers("needs"):
        needed.update(marker.args)
    platforms = platforms_of(metafunc.module)
    names = [name for name, platform in platforms.items() if needed <= platform.features]
    if not names:  # left unparametrized, then deselected (pytest_collection_modifyitems)
        return
    for name in takes:
        metafunc.parametrize(name, names, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A case none of a module's platforms has the features for is not generated at all
    (deselected, as pytest says), rather than reported as skipped for an empty parameter set."""
    absent = [item for item in items if _for_no_platform(item)]
    if absent:
        config.hook.pytest_deselected(items=absent)
        items[:] = [item for item in items if item not in absent]


def _for_no_platform(item: pytest.Item) -> bool:
    takes = {"harness", "opener"} & set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    return bool(takes) and (callspec is None or not takes & set(callspec.params))


def _no_hub_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A contract hub's settings are the harness's alone: the developer's own ANIMAHUB_*
    variables (a real token, a database) never reach it; ANIMAHUB_TEST_* are the tests'."""
    for key in list(os.environ):
        if key.startswith("ANIMAHUB_") and not key.startswith("ANIMAHUB_TEST_"):
            monkeypatch.delenv(key)


@pytest_asyncio.fixture
async def harness(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    _no_hub_environment(monkeypatch)
    platform = platforms_of(request.module)[request.param]
    async with platform.open_harness(tmp_path) as opened:
        yield opened


@pytest.fixture
def opener(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Opener:
    _no_hub_environment(monkeypatch)
    platform = platforms_of(request.module)[request.param]

    def open_harness(
        *, platform_down: bool = False, wrong_credentials: bool = False
    ) -> AbstractAsyncContextManager[Harness]:
        wrong = dict(platform.wrong_credentials) if wrong_credentials else {}
        return platform.open_harness(tmp_path, platform_down=platform_down, **wrong)

    return open_harness
