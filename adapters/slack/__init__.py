"""Slack: Socket Mode or the Events API through slack-bolt (docs/platforms/slack.md)."""

from adapters.slack.adapter import SlackAdapter

__all__ = ["SlackAdapter"]
