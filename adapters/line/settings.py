"""`[line]`: one LINE Messaging API channel, its two credentials and where its API is."""

from __future__ import annotations

from pydantic import SecretStr, model_validator

from hub.adapter import PlatformSection


class LineSettings(PlatformSection):
    """A Messaging API channel. Events arrive at `POST /webhooks/line` (docs/platforms/line.md)."""

    # Basic settings > Channel secret: signs every webhook request (X-Line-Signature).
    channel_secret: SecretStr | None = None
    # Messaging API > Channel access token (long-lived): the bearer token of every API call.
    channel_access_token: SecretStr | None = None
    # The Messaging API base; tests point it at animahub_kit/fakes/line_server.py.
    api_url: str = "https://api.line.me"
    # Where message content (attachments) is downloaded from; tests point it at the fake too.
    data_api_url: str = "https://api-data.line.me"

    @model_validator(mode="after")
    def _complete(self) -> LineSettings:
        if self.enabled and self.channel_secret is None:
            raise ValueError("enabled needs channel_secret (set ANIMAHUB_LINE__CHANNEL_SECRET)")
        if self.enabled and self.channel_access_token is None:
            raise ValueError(
                "enabled needs channel_access_token (set ANIMAHUB_LINE__CHANNEL_ACCESS_TOKEN)"
            )
        return self
