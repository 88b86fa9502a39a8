"""LINE: one Messaging API channel through line-bot-sdk v3 (docs/platforms/line.md)."""

from adapters.line.adapter import LineAdapter
from adapters.line.settings import LineSettings
from hub.adapter import AdapterPlugin

PLUGIN = AdapterPlugin(settings=LineSettings, build=LineAdapter.from_settings)

__all__ = ["PLUGIN", "LineAdapter", "LineSettings"]
