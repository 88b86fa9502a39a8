"""`[discord]`: one Discord bot, its tokens and where its REST API and gateway are."""

from __future__ import annotations

from pydantic import Field, SecretStr, model_validator

from hub.adapter import PlatformSection


class DiscordSettings(PlatformSection):
    """One Discord bot on the gateway, plus the optional HTTP interactions endpoint."""

    bot_token: SecretStr | None = None
    # Hex Ed25519 key from the developer portal: needed only for /discord/interactions.
    public_key: str = Field(default="", pattern="^([0-9a-fA-F]{64})?$")
    # REST and gateway bases; tests point them at animahub_kit/fakes/discord_server.py.
    api_url: str = "https://discord.com/api/v10"
    gateway_url: str = ""  # empty: the URL Discord's REST API names
    # Optional per-Anima bot tokens, so each Anima posts as itself.
    anima_tokens: dict[str, SecretStr] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> DiscordSettings:
        if self.enabled and self.bot_token is None:
            raise ValueError("enabled needs bot_token (set ANIMAHUB_DISCORD__BOT_TOKEN)")
        return self
