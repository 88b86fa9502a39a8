"""What `POST /slack/events` checks before slack-bolt sees a request.

Bolt parses the body before it verifies the signature, and fails with a 500 on a body that
is not JSON, on a non-numeric `X-Slack-Request-Timestamp`, on a non-ASCII signature and on
fields of the wrong type (a dict where an id belongs). So the route verifies first, here, as
Slack documents it (v0 HMAC-SHA256 of `v0:{timestamp}:{raw body}` with the signing secret,
timestamp within five minutes): anything else is 401 before the body is read. A signed body
the hub cannot use (not UTF-8, not JSON, an event whose ids are not Slack ids) is 400; what
passes is handed to Bolt, which verifies it again and dispatches it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

MAX_AGE_S = 300
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
SLACK_ID = re.compile(r"[A-Z0-9]{1,40}")
MESSAGE_TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}")
_TRIGGER = re.compile(r"[\w.]{1,200}")
_ID_FIELDS = ("user", "bot_id", "team", "parent_user_id")
_TEXT_FIELDS = ("text", "subtype", "channel_type", "username")
_MESSAGE_EVENTS = ("message", "app_mention")


def signature_problem(
    secret: str, body: bytes, timestamp: str | None, signature: str | None, now: float
) -> str | None:
    """Why the request is not from Slack, or None when it is signed and fresh."""
    if not timestamp or not signature:
        return "unsigned request"
    if not _TIMESTAMP.fullmatch(timestamp):
        return "malformed X-Slack-Request-Timestamp"
    if abs(now - int(timestamp)) > MAX_AGE_S:
        return "request timestamp is more than five minutes away (a replay?)"
    base = b"v0:" + timestamp.encode() + b":" + body
    expected = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    # Header values arrive decoded as latin-1: encoding them back gives the bytes sent.
    if not hmac.compare_digest(expected.encode(), signature.encode("latin-1", "replace")):
        return "invalid request signature"
    return None


def body_problem(content_type: str, body: bytes) -> str | None:
    """Why a signed body cannot be handled, or None. Parsed the way Bolt parses it."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/json" or text.startswith("{"):
        return _json_problem(text)
    form = dict(parse_qsl(text, keep_blank_values=True))
    if "payload" in form:
        return _json_problem(form["payload"])
    if "command" in form:
        return command_problem(form)
    return None  # nothing Bolt has a listener for: it answers 404 itself


def _json_problem(text: str) -> str | None:
    try:
        payload = json.loads(text)
    except ValueError:
        return "the body is not JSON"
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        return "not a Slack request: no type"
    if payload["type"] == "url_verification" and not isinstance(payload.get("challenge"), str):
        return "url_verification without a challenge"
    if payload["type"] != "event_callback":
        return None
    event = payload.get("event")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return "event_callback without an event"
    if not isinstance(payload.get("event_id"), str):
        return "event_callback without an event_id"
    if payload.get("team_id") is not None and not _matches(SLACK_ID, payload["team_id"]):
        return "team_id is not a Slack id"
    return event_problem(event) if event["type"] in _MESSAGE_EVENTS else None


def event_problem(event: Mapping[str, Any]) -> str | None:
    """Why a `message` or `app_mention` event is not one Slack would send, or None."""
    if not _matches(SLACK_ID, event.get("channel")):
        return "the event has no valid channel id"
    problem = _message_problem(event)
    if problem is not None:
        return problem
    for key in ("message", "previous_message"):  # message_changed carries both
        nested = event.get(key)
        if nested is not None:
            if not isinstance(nested, dict):
                return f"{key} is not an object"
            problem = _message_problem(nested)
            if problem is not None:
                return f"{key}: {problem}"
    return None


def _message_problem(message: Mapping[str, Any]) -> str | None:
    if not _matches(MESSAGE_TS, message.get("ts")):
        return "no valid ts"
    if "thread_ts" in message and not _matches(MESSAGE_TS, message["thread_ts"]):
        return "thread_ts is not a ts"
    for key in _ID_FIELDS:
        if message.get(key) is not None and not _matches(SLACK_ID, message[key]):
            return f"{key} is not a Slack id"
    for key in _TEXT_FIELDS:
        if message.get(key) is not None and not isinstance(message[key], str):
            return f"{key} is not a string"
    files = message.get("files")
    if files is not None and not (
        isinstance(files, list) and all(isinstance(f, dict) for f in files)
    ):
        return "files is not a list of objects"
    return None


def command_problem(form: Mapping[str, str]) -> str | None:
    """Why a slash command's form is not one Slack would send, or None."""
    command = form.get("command", "")
    if not (command.startswith("/") and 1 < len(command) <= 64):
        return "no valid command"
    for key in ("user_id", "channel_id", "team_id"):
        if not _matches(SLACK_ID, form.get(key)):
            return f"{key} is not a Slack id"
    if not _matches(_TRIGGER, form.get("trigger_id")):
        return "no valid trigger_id"
    return None


def _matches(pattern: re.Pattern[str], value: object) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None
