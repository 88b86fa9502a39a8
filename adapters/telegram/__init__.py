"""Telegram: long polling or a webhook through python-telegram-bot (docs/platforms/telegram.md).

This package's entry point (`PLUGIN`) is read whenever settings load, by every CLI command:
it names only the `[telegram]` settings model, and the adapter module, with python-telegram-bot, is
imported when `[telegram] enabled` (docs/architecture.md, "Boundaries").
"""

from __future__ import annotations

import os

# python-telegram-bot 22 warns on every 429 unless time periods are timedeltas (its next major
# version's behaviour); opt in before anything builds a RetryAfter. outbound.py reads both.
os.environ.setdefault("PTB_TIMEDELTA", "true")

from typing import TYPE_CHECKING, Any

from adapters.telegram.settings import TelegramSettings
from hub.adapter import Adapter, AdapterPlugin

if TYPE_CHECKING:
    from adapters.telegram.adapter import TelegramAdapter


def build(section: TelegramSettings) -> Adapter:
    """The adapter, built when `[telegram]` is enabled: its module is imported only then."""
    from adapters.telegram.adapter import TelegramAdapter

    return TelegramAdapter(section)


def __getattr__(attribute: str) -> Any:
    """`from adapters.telegram import TelegramAdapter` still works, importing the adapter then."""
    if attribute == "TelegramAdapter":
        from adapters.telegram.adapter import TelegramAdapter

        return TelegramAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


PLUGIN = AdapterPlugin(settings=TelegramSettings, build=build)

__all__ = ["PLUGIN", "TelegramAdapter", "TelegramSettings", "build"]
