"""What `POST /webhooks/line` checks before line-bot-sdk parses a webhook.

The signature is checked on the raw bytes, before anything is decoded: `X-Line-Signature`
is the base64 HMAC-SHA256 of the body with the channel secret (LINE's "Verify webhook
signature"); a request without it, or with another, is 401. A signed body that is not
LINE's shape is 400 and nothing of it is stored: the SDK's models accept an event id of
any length, a message without an id or a timestamp no clock can hold, which would become
rows no reply can reach. LINE signs no timestamp, so a replayed request passes both checks;
the hub's dedup on `webhookEventId` answers it once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping
from typing import Any

_ID = re.compile(r"[0-9A-Za-z]{1,64}")  # user, group and room ids; webhookEventId (a ULID)
_MESSAGE_ID = re.compile(r"[0-9]{1,32}")
_MAX_MS = 10**13  # a timestamp in milliseconds, before the year 2286
_SOURCES = {"user": "userId", "group": "groupId", "room": "roomId"}
_MAX_EVENTS = 1000


class Malformed(ValueError):
    pass


def signed(secret: str, body: bytes, signature: str) -> bool:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    expected = base64.b64encode(digest)
    # Header values arrive decoded as latin-1: encoding them back gives the bytes sent.
    return hmac.compare_digest(expected, signature.encode("latin-1", "replace"))


def payload_problem(data: object) -> str | None:
    """Why a signed body is not a LINE webhook the hub can read, or None."""
    try:
        if not isinstance(data, dict):
            raise Malformed("not an object")
        _id(data, "destination")
        events = data.get("events")
        if not isinstance(events, list) or len(events) > _MAX_EVENTS:
            raise Malformed("events is not a list")
        for event in events:
            _event(event)
    except Malformed as exc:
        return str(exc)
    return None


def _event(event: object) -> None:
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise Malformed("an event without a type")
    _id(event, "webhookEventId")
    stamp = event.get("timestamp")
    if not isinstance(stamp, int) or isinstance(stamp, bool) or not 0 <= stamp < _MAX_MS:
        raise Malformed("an event without a valid timestamp")
    context = event.get("deliveryContext")
    if not isinstance(context, dict) or not isinstance(context.get("isRedelivery"), bool):
        raise Malformed("an event without a deliveryContext")
    if event.get("replyToken") is not None and not isinstance(event["replyToken"], str):
        raise Malformed("replyToken is not a string")
    if event["type"] == "message":
        _source(event.get("source"))
        _message(event.get("message"))


def _source(source: object) -> None:
    if not isinstance(source, dict) or source.get("type") not in _SOURCES:
        raise Malformed("a message event without a source")
    _id(source, _SOURCES[source["type"]])
    if source.get("userId") is not None:
        _id(source, "userId")


def _message(message: object) -> None:
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise Malformed("a message event without a message")
    if not _matches(_MESSAGE_ID, message.get("id")):
        raise Malformed("a message without a valid id")
    if message["type"] == "text" and not isinstance(message.get("text"), str):
        raise Malformed("a text message without text")
    mention = message.get("mention")
    if mention is None:
        return
    mentionees = mention.get("mentionees") if isinstance(mention, dict) else None
    if not isinstance(mentionees, list):
        raise Malformed("mention without mentionees")
    for mentionee in mentionees:
        if not isinstance(mentionee, dict) or not all(
            _natural(mentionee.get(key)) for key in ("index", "length")
        ):
            raise Malformed("a mentionee without index and length")


def _id(parent: Mapping[str, Any], key: str) -> None:
    if not _matches(_ID, parent.get(key)):
        raise Malformed(f"{key} is not a LINE id")


def _natural(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


def _matches(pattern: re.Pattern[str], value: object) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None
