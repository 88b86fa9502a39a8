"""`[telegram]`: one bot, its token, where the Bot API is, and how updates arrive."""

from __future__ import annotations

import re

from pydantic import SecretStr, model_validator

from hub.adapter import PlatformSection

_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")  # what setWebhook accepts as secret_token
# A token from @BotFather: the bot's id, a colon, the secret ("123456789:AAHd-x_…"). Checked
# here so a mistyped one is named at start, not retried as an unreachable Bot API.
_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]+")


class TelegramSettings(PlatformSection):
    """Long polling by default; a webhook at `<public_url>/webhooks/telegram` when set."""

    bot_token: SecretStr | None = None  # from @BotFather: "123456:ABC-..."
    # The Bot API root (requests go to <api_url>/bot<token>/<method>); tests point it at
    # animahub_kit/fakes/telegram_server.py.
    api_url: str = "https://api.telegram.org"
    # The hub's public HTTPS base URL; set it to receive updates by webhook instead of polling.
    public_url: str = ""
    webhook_secret: SecretStr | None = None  # checked on every webhook request
    poll_timeout_s: int = 30  # getUpdates long-poll timeout
    # Pacing of our own posts and edits (Telegram: ~1 message/s per chat, 20/min per group).
    chat_interval_s: float = 1.0
    group_per_minute: int = 20

    @model_validator(mode="after")
    def _complete(self) -> TelegramSettings:
        if not self.enabled:
            return self
        if self.bot_token is None:
            raise ValueError("enabled needs bot_token (set ANIMAHUB_TELEGRAM__BOT_TOKEN)")
        if not _TOKEN.fullmatch(self.bot_token.get_secret_value()):
            raise ValueError(
                "bot_token is not a bot token: @BotFather gives one like 123456789:AAHd-x_…"
                " (the bot's id, a colon, then letters, digits, _ and -)"
            )
        if self.public_url:
            if self.webhook_secret is None:
                raise ValueError(
                    "public_url (webhook mode) needs webhook_secret "
                    "(set ANIMAHUB_TELEGRAM__WEBHOOK_SECRET)"
                )
            if not _SECRET.fullmatch(self.webhook_secret.get_secret_value()):
                raise ValueError("webhook_secret: 1-256 characters of A-Z, a-z, 0-9, _ and -")
        return self
