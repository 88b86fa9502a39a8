"""Slack: Socket Mode or the Events API through slack-bolt (docs/platforms/slack.md).

This package's entry point (`PLUGIN`) is read whenever settings load, by every CLI command:
it names only the `[slack]` settings model, and the adapter module, with slack_sdk and
slack_bolt, is imported when `[slack] enabled` (docs/architecture.md, "Boundaries").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.slack.settings import SlackSettings
from hub.adapter import Adapter, AdapterPlugin

if TYPE_CHECKING:
    from adapters.slack.adapter import SlackAdapter


def build(section: SlackSettings) -> Adapter:
    """The adapter, built when `[slack]` is enabled: its module is imported only then."""
    from adapters.slack.adapter import SlackAdapter

    return SlackAdapter(section)


def __getattr__(attribute: str) -> Any:
    """`from adapters.slack import SlackAdapter` still works, importing the adapter then."""
    if attribute == "SlackAdapter":
        from adapters.slack.adapter import SlackAdapter

        return SlackAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


PLUGIN = AdapterPlugin(settings=SlackSettings, build=build)

__all__ = ["PLUGIN", "SlackAdapter", "SlackSettings", "build"]
