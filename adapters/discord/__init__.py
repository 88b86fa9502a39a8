"""Discord: a gateway bot with the message-content intent, slash commands, and an optional
HTTP interactions endpoint (docs/platforms/discord.md).

This package's entry point (`PLUGIN`) is read whenever settings load, by every CLI command:
it names only the `[discord]` settings model, and the adapter module, with discord.py, is
imported when `[discord] enabled` (docs/architecture.md, "Boundaries").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.discord.settings import DiscordSettings
from hub.adapter import Adapter, AdapterPlugin

if TYPE_CHECKING:
    from adapters.discord.adapter import DiscordAdapter


def build(section: DiscordSettings) -> Adapter:
    """The adapter, built when `[discord]` is enabled: its module is imported only then."""
    from adapters.discord.adapter import DiscordAdapter

    return DiscordAdapter(section)


def __getattr__(attribute: str) -> Any:
    """`from adapters.discord import DiscordAdapter` still works, importing the adapter then."""
    if attribute == "DiscordAdapter":
        from adapters.discord.adapter import DiscordAdapter

        return DiscordAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


PLUGIN = AdapterPlugin(settings=DiscordSettings, build=build)

__all__ = ["PLUGIN", "DiscordAdapter", "DiscordSettings", "build"]
