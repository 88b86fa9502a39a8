"""Discord: a gateway bot with the message-content intent, slash commands, and an optional
HTTP interactions endpoint (docs/platforms/discord.md)."""

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.settings import DiscordSettings
from hub.adapter import AdapterPlugin

PLUGIN = AdapterPlugin(settings=DiscordSettings, build=DiscordAdapter.from_settings)

__all__ = ["PLUGIN", "DiscordAdapter", "DiscordSettings"]
