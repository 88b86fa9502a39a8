"""A local fake of the LINE Messaging API that the real line-bot-sdk talks to (DESIGN §9).

It runs in the test's event loop (aiohttp.web on 127.0.0.1) and speaks LINE's wire protocol:

* ``POST /v2/bot/message/reply``: a reply token is valid once, for ``reply_token_ttl_s``
  after its webhook (LINE: about a minute), and only for the chat its event came from;
  up to 5 message objects, 5,000 characters a text. Anything else: 400 "Invalid reply token".
* ``POST /v2/bot/message/push``: to a user, group or room; with ``X-Line-Retry-Key`` (a UUID)
  a repeat of an accepted key answers 409 with the first request's ``sentMessages`` and the
  ``X-Line-Accepted-Request-Id`` header, and sends nothing.
* ``GET /v2/bot/profile/{userId}``, ``GET /v2/bot/group/{groupId}/member/{userId}``,
  ``GET /v2/bot/room/{roomId}/member/{userId}``, ``GET /v2/bot/info`` and
  ``POST /v2/bot/chat/loading/start`` (1:1 chats only).
* ``GET /v2/bot/message/{messageId}/content`` (LINE serves it on its api-data host; here the
  same server): the content added with :meth:`FakeLine.add_content`, 404 for any other id,
  202 while :meth:`add_content` says it is still being prepared; recorded like every call
  (``calls_to("content")``), so a test can check that nothing was downloaded.
* The webhook as LINE's side of it: :meth:`FakeLine.deliver` POSTs ``{"destination",
  "events"}`` to the hub's ``webhook_url``, signed with the channel secret (``X-Line-Signature``:
  base64 HMAC-SHA256 of the body); :meth:`FakeLine.redeliver` sends an event again with
  ``deliveryContext.isRedelivery: true`` and the same ``webhookEventId``; :meth:`forged` and
  :meth:`unsigned` are the rejection cases; :meth:`FakeLine.deliver_until_accepted` is LINE's
  webhook redelivery: an event not answered 2xx in time is sent again, marked redelivered.

Every request is recorded (:attr:`FakeLine.calls`), and every message the bot sent is kept in
:attr:`FakeLine.messages`. Faults: :meth:`rate_limit` (an ordinary 429), :meth:`exhaust_quota`
(the monthly-limit 429 on push), a wrong access token gets 401, :meth:`drop_next_send_response`
accepts the next push or reply, records it, then closes the connection without answering;
:meth:`fail_next_reply` answers the next reply 5xx, having delivered it or not (LINE says a
5xx may have been delivered);
:attr:`FakeLine.faults` (animahub_kit/fakes/faults.py) decides for every reply and push.
A fake built with a fixed ``port`` can be started later (the platform down at hub start).

This module wires the pieces in animahub_kit/fakes/line/ (its docstring names them) behind
:class:`FakeLine`, and keeps the names tests import from here.
"""

from __future__ import annotations

import logging

from aiohttp import web

from animahub_kit.fakes.faults import FaultPolicy, RateLimit
from animahub_kit.fakes.line.account import Account
from animahub_kit.fakes.line.content import Downloads
from animahub_kit.fakes.line.events import media_event, sticker_event, text_event
from animahub_kit.fakes.line.messages import Messages
from animahub_kit.fakes.line.objects import (
    JSON,
    MAX_MESSAGES,
    MAX_TEXT,
    ApiCall,
    Chat,
    Content,
    Delivery,
    SentMessage,
    utf16_len,
)
from animahub_kit.fakes.line.state import LineState
from animahub_kit.fakes.line.webhook import Webhook, sign
from animahub_kit.fakes.line.wire import AUTH_MESSAGE, QUOTA_MESSAGE, RATE_MESSAGE, Wire
from animahub_kit.fakes.listener import Listener, Served

# what tests import from here; the names this module had before it was split stay importable
__all__ = [
    "AUTH_MESSAGE",
    "JSON",
    "MAX_MESSAGES",
    "MAX_TEXT",
    "QUOTA_MESSAGE",
    "RATE_MESSAGE",
    "ApiCall",
    "Chat",
    "Content",
    "Delivery",
    "FakeLine",
    "FaultPolicy",
    "Listener",
    "RateLimit",
    "SentMessage",
    "Served",
    "log",
    "sign",
    "utf16_len",
]

log = logging.getLogger(__name__)


class FakeLine(Served):
    """The fake LINE: what it holds is its `state` (animahub_kit/fakes/line/state.py), read and
    changed here through the names tests use; the wire, the handlers and the webhook side
    are animahub_kit/fakes/line/'s, wired to the routes in `start`."""

    def __init__(
        self,
        *,
        channel_secret: str = "fake-channel-secret",
        access_token: str = "fake-channel-access-token",
        bot_user_id: str = "U" + "b0" * 16,
        bot_name: str = "AnimaHub",
        port: int = 0,
        reply_token_ttl_s: float = 60.0,
    ) -> None:
        self.state = LineState(
            channel_secret=channel_secret,
            access_token=access_token,
            bot_user_id=bot_user_id,
            bot_name=bot_name,
            reply_token_ttl_s=reply_token_ttl_s,
        )
        self._listener = Listener(port)
        self._wire = Wire(self.state)
        self._messages = Messages(self.state, self._wire)
        self._account = Account(self.state, self._wire)
        self._downloads = Downloads(self.state, self._wire)
        self._webhook = Webhook(self.state)

    # lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeLine:
        app = web.Application()
        account = self._account
        app.router.add_post("/v2/bot/message/reply", self._messages.reply)
        app.router.add_post("/v2/bot/message/push", self._messages.push)
        app.router.add_get("/v2/bot/profile/{user}", account.profile)
        app.router.add_get("/v2/bot/group/{chat}/member/{user}", account.member)
        app.router.add_get("/v2/bot/room/{chat}/member/{user}", account.member)
        app.router.add_get("/v2/bot/info", account.info)
        app.router.add_post("/v2/bot/chat/loading/start", account.loading)
        app.router.add_get("/v2/bot/message/{message}/content", self._downloads.content)
        await self._listener.serve(app)
        self._webhook.open()
        return self

    async def stop(self) -> None:
        await self._webhook.close()
        await self._listener.close()

    # what it holds (the state's; `webhook_url` and `faults` can be set) -----------------

    @property
    def channel_secret(self) -> str:
        return self.state.channel_secret

    @property
    def access_token(self) -> str:
        return self.state.access_token

    @property
    def bot_user_id(self) -> str:
        return self.state.bot_user_id

    @property
    def bot_name(self) -> str:
        return self.state.bot_name

    @property
    def reply_token_ttl_s(self) -> float:
        return self.state.reply_token_ttl_s

    @property
    def users(self) -> dict[str, JSON]:
        return self.state.users

    @property
    def chats(self) -> dict[str, Chat]:
        return self.state.chats

    @property
    def calls(self) -> list[ApiCall]:
        return self.state.calls

    @property
    def messages(self) -> list[SentMessage]:
        return self.state.messages

    @property
    def loading(self) -> list[JSON]:
        return self.state.loading

    @property
    def contents(self) -> dict[str, Content]:
        """Message id -> what its content is."""
        return self.state.contents

    @property
    def deliveries(self) -> list[Delivery]:
        return self.state.deliveries

    @property
    def webhook_url(self) -> str | None:
        return self.state.webhook_url

    @webhook_url.setter
    def webhook_url(self, value: str | None) -> None:
        self.state.webhook_url = value

    @property
    def faults(self) -> FaultPolicy | None:
        """Consulted before every reply and push (animahub_kit/fakes/faults.py); None: no faults."""
        return self.state.faults

    @faults.setter
    def faults(self, value: FaultPolicy | None) -> None:
        self.state.faults = value

    @property
    def _events(self) -> dict[str, JSON]:
        """webhookEventId -> the event as first sent (a test may plant one: a lost delivery)."""
        return self.state.events

    # the account -------------------------------------------------------------------------

    def add_user(self, user_id: str, display_name: str, language: str = "en") -> None:
        self.state.add_user(user_id, display_name, language)

    def add_group(self, group_id: str, members: list[str], *, room: bool = False) -> None:
        self.state.add_group(group_id, members, room=room)

    def rename_user(self, user_id: str, display_name: str) -> None:
        self.state.rename_user(user_id, display_name)

    def add_content(
        self,
        message_id: str,
        data: bytes,
        content_type: str = "application/octet-stream",
        *,
        content_length: bool = True,
        preparing: bool = False,
    ) -> None:
        """The content of an image, video, audio or file message, for its download."""
        self.state.add_content(
            message_id, data, content_type, content_length=content_length, preparing=preparing
        )

    # fault injection ---------------------------------------------------------------------

    def rate_limit(
        self, times: int, retry_after: float | None = None, paths: tuple[str, ...] = ()
    ) -> None:
        """Answer the next `times` sends (reply and push, or only `paths`, e.g. ("push",))
        with an ordinary 429. LINE sends no Retry-After; the fake adds one when given."""
        self._wire.rate_limit(times, retry_after, paths)

    def exhaust_quota(self, exhausted: bool = True) -> None:
        """Every push answers 429 "You have reached your monthly limit." (replies are free)."""
        self._wire.quota_exhausted = exhausted

    def drop_next_send_response(self) -> None:
        """Accept the next push or reply and record it, then close without answering."""
        self._wire.drop_next = True

    def fail_next_reply(self, status: int = 503, *, delivered: bool = False) -> None:
        """Answer the next reply (with a valid token) `status`; with `delivered`, after
        sending it and spending its token, as LINE may."""
        self._wire.failing_replies.append((status, delivered))

    def expire_reply_tokens(self) -> None:
        self.state.expire_reply_tokens()

    # what the fake saw -------------------------------------------------------------------

    def calls_to(self, endpoint: str) -> list[ApiCall]:
        """Requests to `reply`, `push`, `profile`, `member`, `info` or `loading`."""
        return self.state.calls_to(endpoint)

    def texts(self) -> list[str]:
        return self.state.texts()

    # webhook events: people speaking -----------------------------------------------------

    def text_event(
        self,
        user: str,
        text: str,
        *,
        chat: str | None = None,
        mention_bot: bool = False,
        mention_users: tuple[str, ...] = (),
    ) -> JSON:
        """A text message `user` wrote, in a 1:1 chat or in the group or room `chat`;
        `mention_bot` prefixes `@<bot name> ` as LINE's mention object, `mention_users`
        appends `@<display name>` for each (LINE indexes them in UTF-16 code units)."""
        return text_event(
            self.state,
            user,
            text,
            chat=chat,
            mention_bot=mention_bot,
            mention_users=mention_users,
        )

    def media_event(
        self,
        user: str,
        kind: str,
        *,
        chat: str | None = None,
        file_name: str = "",
        size: int = 0,
    ) -> JSON:
        """An image, video, audio or file message (its content stays on LINE's side)."""
        return media_event(self.state, user, kind, chat=chat, file_name=file_name, size=size)

    def sticker_event(self, user: str, *, chat: str | None = None) -> JSON:
        return sticker_event(self.state, user, chat=chat)

    # webhook delivery --------------------------------------------------------------------

    def payload(self, events: list[JSON]) -> bytes:
        return self._webhook.payload(events)

    async def post_webhook(self, raw: bytes, signature: str | None) -> Delivery:
        return await self._webhook.post_webhook(raw, signature)

    async def deliver(self, *events: JSON) -> Delivery:
        """POST the events in one signed webhook request, as LINE does."""
        return await self._webhook.deliver(*events)

    async def deliver_until_accepted(
        self, event: JSON, *, retry_delays_s: tuple[float, ...], timeout_s: float = 2.0
    ) -> Delivery:
        """Deliver one event the way LINE does with webhook redelivery on, until it is
        answered 2xx or `retry_delays_s` run out (animahub_kit/fakes/line/webhook.py)."""
        return await self._webhook.deliver_until_accepted(
            event, retry_delays_s=retry_delays_s, timeout_s=timeout_s
        )

    async def redeliver(self, webhook_event_id: str) -> Delivery:
        """The same event again, marked as a redelivery (its reply token is long gone)."""
        return await self._webhook.redeliver(webhook_event_id)

    async def forged(self, *events: JSON) -> Delivery:
        return await self._webhook.forged(*events)

    async def unsigned(self, *events: JSON) -> Delivery:
        return await self._webhook.unsigned(*events)
