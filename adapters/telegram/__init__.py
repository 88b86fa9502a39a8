"""Telegram: long polling or a webhook through python-telegram-bot (docs/platforms/telegram.md)."""

import os

# python-telegram-bot 22 warns on every 429 unless time periods are timedeltas (its next major
# version's behaviour); opt in before anything builds a RetryAfter. outbound.py reads both.
os.environ.setdefault("PTB_TIMEDELTA", "true")

from adapters.telegram.adapter import TelegramAdapter
from adapters.telegram.settings import TelegramSettings
from hub.adapter import AdapterPlugin

PLUGIN = AdapterPlugin(settings=TelegramSettings, build=TelegramAdapter.from_settings)

__all__ = ["PLUGIN", "TelegramAdapter", "TelegramSettings"]
