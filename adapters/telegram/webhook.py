"""`POST /webhooks/telegram`: updates pushed by Telegram when `telegram.public_url` is set.

The `X-Telegram-Bot-Api-Secret-Token` header is compared (in constant time) with the
secret given to `setWebhook` before the body is even read: a request without it, or with
another, is answered 401 and touches nothing. An update is acknowledged (200) only once the
hub has stored it, or kept it as failed (hub/inbound/failed_updates.py: one nobody can handle must
not
come back for ever); any other answer makes Telegram deliver it again, and the hub's dedup
then answers it once.
"""

from __future__ import annotations

import logging
from typing import Protocol

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from telegram import Update

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
WEBHOOK_PATH = "/webhooks/telegram"
# What python-telegram-bot's Update.de_json raises for a body not shaped like the Bot API's
# (a date of 2**63: OverflowError or OSError; a field of another type: the rest).
NOT_AN_UPDATE = (KeyError, TypeError, ValueError, AttributeError, OverflowError, OSError)
log = logging.getLogger(__name__)


class Receiver(Protocol):
    @property
    def running(self) -> bool: ...

    def check_secret(self, given: str | None) -> bool: ...

    def parse_update(self, body: bytes) -> Update | None: ...

    async def take(self, update: Update) -> None: ...


def router(receiver: Receiver) -> APIRouter:
    async def telegram_webhook(request: Request) -> Response:
        if not receiver.check_secret(request.headers.get(SECRET_HEADER)):
            return JSONResponse({"detail": "bad secret token"}, status_code=401)
        if not receiver.running:  # not acknowledged: Telegram delivers it again later
            return JSONResponse({"detail": "the hub is not running"}, status_code=503)
        body = await request.body()
        try:
            update = receiver.parse_update(body)
        except NOT_AN_UPDATE as exc:
            log.warning("refused a Telegram webhook body the SDK cannot read: %r", exc)
            update = None
        if update is None:
            return JSONResponse({"detail": "not a Telegram update"}, status_code=400)
        # Stored, or kept as failed (then acknowledged all the same, or Telegram would send
        # it again for ever); a transient failure raises: 503, and Telegram sends it again.
        await receiver.take(update)
        return Response(status_code=200)

    api = APIRouter()
    api.add_api_route(WEBHOOK_PATH, telegram_webhook, methods=["POST"], include_in_schema=False)
    return api
