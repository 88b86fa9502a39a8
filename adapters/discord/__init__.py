"""Discord: a gateway bot with the message-content intent, slash commands, and an optional
HTTP interactions endpoint (docs/platforms/discord.md)."""

from adapters.discord.adapter import DiscordAdapter

__all__ = ["DiscordAdapter"]
