"""Slack: Socket Mode or the Events API through slack-bolt (docs/platforms/slack.md)."""

from adapters.slack.adapter import SlackAdapter
from adapters.slack.settings import SlackSettings
from hub.adapter import AdapterPlugin

PLUGIN = AdapterPlugin(settings=SlackSettings, build=SlackAdapter.from_settings)

__all__ = ["PLUGIN", "SlackAdapter", "SlackSettings"]
