"""Slack Web API failures, translated into the outbox's retry vocabulary (hub/adapter.py).

429 becomes `RateLimited` with Slack's `Retry-After`; 5xx, network errors and Slack's own
"try again" codes become `TransientDeliveryError`; errors no retry can fix (the channel is
gone, the bot was removed, the token revoked, the text rejected) `PermanentDeliveryError`.
An error code not listed is treated as transient: the outbox retries it with backoff and
then marks the delivery failed, visibly, instead of dropping it on the first surprise.

A post that was written but never answered (the connection dropped, the answer was cut off
or did not come in time) may have created the message, and Slack has no idempotency key to
ask with: for a call that is not `idempotent` that is `OutcomeUnknown`, which the outbox
never sends again. Only a connection that could not be opened at all is surely unsent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from hub.adapter import (
    DeliveryError,
    OutcomeUnknown,
    PermanentDeliveryError,
    RateLimited,
    TransientDeliveryError,
)

_DEFAULT_RETRY_AFTER_S = 1.0

PERMANENT = frozenset(
    {
        "access_denied",
        "account_inactive",
        "as_user_not_supported",
        "cannot_reply_to_message",
        "cant_update_message",
        "channel_not_found",
        "edit_window_closed",
        "ekm_access_denied",
        "invalid_arg_name",
        "invalid_arguments",
        "invalid_auth",
        "invalid_blocks",
        "invalid_charset",
        "is_archived",
        "message_not_found",
        "method_deprecated",
        "missing_scope",
        "msg_too_long",
        "no_permission",
        "no_text",
        "not_allowed_token_type",
        "not_authed",
        "not_in_channel",
        "restricted_action",
        "restricted_action_non_threadable_channel",
        "restricted_action_read_only_channel",
        "restricted_action_thread_only_channel",
        "team_access_not_granted",
        "token_expired",
        "token_revoked",
        "too_many_attachments",
        "unknown_method",
        "user_not_found",
    }
)
RATE_LIMITED = frozenset({"ratelimited", "rate_limited", "message_limit_exceeded"})


def error_code(exc: SlackApiError) -> str:
    data = exc.response.data
    code = data.get("error") if isinstance(data, dict) else None
    return str(code) if code else f"http_{exc.response.status_code}"


def _retry_after(headers: Mapping[str, Any]) -> float:
    for name, value in headers.items():
        if name.lower() == "retry-after":
            try:
                return max(0.0, float(value))
            except (TypeError, ValueError):
                break
    return _DEFAULT_RETRY_AFTER_S


def delivery_error(method: str, exc: SlackApiError) -> DeliveryError:
    code = error_code(exc)
    status = exc.response.status_code
    if status == 429 or code in RATE_LIMITED:
        return RateLimited(_retry_after(exc.response.headers), f"{method}: rate limited ({code})")
    if code in PERMANENT and status < 500:
        return PermanentDeliveryError(f"{method}: {code}")
    return TransientDeliveryError(f"{method}: {code}")


# Failures before the request left: nothing can have reached Slack (aiohttp raises these
# while connecting; a request whose connection timed out was never written).
_UNSENT = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)


def network_error(method: str, exc: BaseException, *, idempotent: bool) -> DeliveryError:
    """A request that got no answer from Slack: surely unsent, or perhaps carried out."""
    detail = f"{method}: {type(exc).__name__}: {exc}"
    if idempotent or isinstance(exc, _UNSENT):
        return TransientDeliveryError(detail)
    # ServerDisconnectedError, ClientPayloadError, a reset or a read timeout: the request
    # was written, so Slack may have posted it.
    return OutcomeUnknown(f"{detail} (Slack may have carried it out)")


async def call(
    method: str, request: Awaitable[AsyncSlackResponse], *, idempotent: bool = True
) -> AsyncSlackResponse:
    """Await one Web API call, raising a DeliveryError subclass for every way it can fail.
    `idempotent=False` for a call that must not be repeated blindly (`chat.postMessage`)."""
    try:
        return await request
    except SlackApiError as exc:
        raise delivery_error(method, exc) from exc
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise network_error(method, exc, idempotent=idempotent) from exc
    except SlackClientError as exc:  # bad arguments on our side: resending cannot help
        raise PermanentDeliveryError(f"{method}: {exc}") from exc
