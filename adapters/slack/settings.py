"""`[slack]`: one Slack app, its tokens and where its Web API is."""

from __future__ import annotations

from pydantic import Field, SecretStr, model_validator

from hub.adapter import PlatformSection


class SlackSettings(PlatformSection):
    """One Slack app. Socket Mode when app_token is set, else the Events API at /slack/events."""

    bot_token: SecretStr | None = None  # xoxb-...
    signing_secret: SecretStr | None = None  # Events API and slash commands over HTTP
    app_token: SecretStr | None = None  # xapp-...: Socket Mode, no public URL needed
    # The Web API base; tests point it at animahub_kit/fakes/slack_server.py.
    api_url: str = "https://slack.com/api/"
    # Optional per-Anima bot tokens (a Slack app each), so each Anima posts as itself.
    anima_tokens: dict[str, SecretStr] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> SlackSettings:
        if self.enabled and self.bot_token is None:
            raise ValueError("enabled needs bot_token (set ANIMAHUB_SLACK__BOT_TOKEN)")
        if self.enabled and self.app_token is None and self.signing_secret is None:
            raise ValueError("enabled needs app_token (Socket Mode) or signing_secret (Events API)")
        return self
