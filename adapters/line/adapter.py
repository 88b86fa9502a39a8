"""The LINE platform: one Messaging API channel through line-bot-sdk v3 (asyncio).

Events arrive at `POST /webhooks/line`. The `X-Line-Signature` (base64 HMAC-SHA256 of the
raw body with the channel secret) is checked before anything is parsed: a forged or
unsigned request gets 401 and touches nothing; a signed body not of LINE's shape, 400
(webhook.py). Each message event is normalized
(normalize.py) and stored by the hub before LINE hears 200, so a crash before then makes
LINE redeliver it (`deliveryContext.isRedelivery`, same `webhookEventId`), and the hub's
dedup answers it once.

Replies leave through the outbox, rendered to plain text (render.py) in messages of up to
5,000 characters, up to five per call (`send_batch`). The reply token of the message being
answered is free and used while it is fresh (LINE: within about a minute, once); a push
(which counts against the monthly quota) is used only without one: proactive posts, the
messages past the fifth of a long reply, an expired token, a redelivered event. Every push
carries an `X-Line-Retry-Key` made from its chunks' idempotency keys, so a retried push is
never doubled. A 1:1 chat shows LINE's loading animation while its turn runs.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from linebot.v3.exceptions import InvalidSignatureError
from linebot.v3.messaging import ApiException
from linebot.v3.webhook import WebhookParser
from linebot.v3.webhooks import MessageEvent

from adapters.line import files, webhook
from adapters.line.normalize import Source, source_of, to_inbound
from adapters.line.outbound import NothingSent, Outbound, ReplyTokenInvalid, ReplyUnanswered
from adapters.line.render import to_plain
from adapters.line.settings import LineSettings
from hub.adapter import (
    AttachmentUnavailable,
    Capabilities,
    DeliveryError,
    FetchedFile,
    HubPort,
    MarkdownDialect,
    MaybeSent,
    MessageTooLarge,
    OutcomeUnknown,
    PermanentDeliveryError,
    PlatformUnauthorized,
    PlatformUnavailable,
    RateLimited,
    TransientDeliveryError,
    handle_or_keep,
)
from hub.messages import Address, Inbound, OutboundChunk

log = logging.getLogger(__name__)
WEBHOOK_PATH = "/webhooks/line"
MAX_TEXT = 5000
MAX_MESSAGES = 5
REPLY_TOKEN_TTL_S = 50.0  # LINE guarantees a reply token for one minute after the webhook
PROFILE_TTL_S = 3600.0
LOADING_S = 60  # the longest LINE allows; it ends by itself when the reply arrives
_REMEMBERED = 5_000
# The namespace of the retry keys (uuid5 of a push's chunk keys): any fixed UUID will do.
RETRY_NAMESPACE = uuid.UUID("8a1d1f54-3c1e-5b0e-9a77-6c1f1e5a0b21")
Clock = Callable[[], float]


def retry_key(chunks: Sequence[OutboundChunk]) -> str:
    """The push's X-Line-Retry-Key: the same chunks always make the same UUID."""
    return str(uuid.uuid5(RETRY_NAMESPACE, "\n".join(c.idempotency_key for c in chunks)))


@dataclass
class _Token:
    token: str
    received: float
    taken: bool = False
    doubtful: bool = False  # a reply on it was answered 5xx: it may have been delivered


class ReplyTokens:
    """The reply token of each message still answerable: handed out once."""

    def __init__(self, ttl_s: float, clock: Clock) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._tokens: OrderedDict[str, _Token] = OrderedDict()

    def put(self, keys: Sequence[str], token: str) -> None:
        """Keep `token` under every key a delivery may name the message by (the hub's
        deliveries answer an event id; the message id is the platform's)."""
        entry = _Token(token, self._clock())
        for key in keys:
            self._tokens[key] = entry
        while len(self._tokens) > _REMEMBERED:
            self._tokens.popitem(last=False)

    def take(self, message_id: str) -> tuple[str, float] | None:
        """The token, and how many seconds it stays good."""
        entry = self._tokens.get(message_id)
        if entry is None or entry.taken:
            return None
        left = self._ttl_s - (self._clock() - entry.received)
        if left < 0:
            return None
        entry.taken = True
        return entry.token, left

    def give_back(self, message_id: str, *, doubtful: bool = False) -> None:
        """The token was not used after all (nothing reached LINE), or, `doubtful`, a reply
        on it was answered 5xx and may or may not have been delivered."""
        entry = self._tokens.get(message_id)
        if entry is not None:
            entry.taken = False
            entry.doubtful = entry.doubtful or doubtful

    def doubtful(self, message_id: str) -> bool:
        entry = self._tokens.get(message_id)
        return entry is not None and entry.doubtful


class Profiles:
    """Display names from LINE's profile API, cached and refreshed every `ttl_s`."""

    def __init__(self, outbound: Outbound, ttl_s: float, clock: Clock) -> None:
        self._outbound = outbound
        self._ttl_s = ttl_s
        self._clock = clock
        self._names: OrderedDict[str, tuple[str, float]] = OrderedDict()

    async def name(self, source: Source) -> str:
        user = source.user or ""
        cached = self._names.get(user)
        if cached is not None and self._clock() - cached[1] < self._ttl_s:
            return cached[0]
        try:
            name = await self._outbound.display_name(source.kind, source.chat, user)
        except ApiException as exc:  # 404: not a friend, left the group; the id names them
            log.info("LINE profile of %s unavailable: %s %s", user, exc.status, exc.reason)
            name = cached[0] if cached else ""
        except (aiohttp.ClientError, TimeoutError, OSError, TransientDeliveryError) as exc:
            log.warning("LINE profile of %s: %s", user, exc)
            return cached[0] if cached else ""  # not cached: asked again next time
        self._names[user] = (name, self._clock())
        self._names.move_to_end(user)
        while len(self._names) > _REMEMBERED:
            self._names.popitem(last=False)
        return name


class LineAdapter:
    name = "line"
    capabilities = Capabilities(
        max_text=MAX_TEXT,
        dialect=MarkdownDialect.PLAIN,
        edits=False,
        threads=False,
        reactions=False,
        slash_commands=False,
        batch=MAX_MESSAGES,
    )

    def __init__(
        self,
        settings: LineSettings,
        *,
        reply_token_ttl_s: float = REPLY_TOKEN_TTL_S,
        profile_ttl_s: float = PROFILE_TTL_S,
        clock: Clock = time.monotonic,
    ) -> None:
        if settings.channel_secret is None or settings.channel_access_token is None:
            raise ValueError("the LINE adapter needs line.channel_secret and channel_access_token")
        self._secret = settings.channel_secret.get_secret_value()
        self._parser = WebhookParser(self._secret)
        self._token = settings.channel_access_token.get_secret_value()
        self._data_api_url = settings.data_api_url
        self._outbound = Outbound(self._token, settings.api_url)
        self._tokens = ReplyTokens(reply_token_ttl_s, clock)
        self._profiles = Profiles(self._outbound, profile_ttl_s, clock)
        self._hub: HubPort | None = None  # set once started: sending works
        # Set as start begins: LINE sends webhooks whether or not GET /v2/bot/info works (a
        # wrong token, LINE unreachable), and events refused then are lost unless
        # redelivery is on; they are stored and answered once sending works.
        self._receiving: HubPort | None = None
        self.bot_user_id = ""
        self._loading: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # Adapter protocol -----------------------------------------------------------------

    async def start(self, hub: HubPort) -> None:
        """Learn the bot's user id (`GET /v2/bot/info`); a failure leaves nothing open, but
        the webhook takes events from then on (the hub is up)."""
        self._receiving = hub
        self._outbound.open()
        try:
            self.bot_user_id = await self._outbound.bot_user_id()
        except ApiException as exc:
            await self._outbound.close()
            reason = f"LINE /v2/bot/info: {exc.status} {exc.reason}"
            if exc.status in (401, 403):
                raise PlatformUnauthorized(f"{reason} (check line.channel_access_token)") from exc
            raise PlatformUnavailable(reason) from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            await self._outbound.close()
            reason = f"LINE cannot be reached: {type(exc).__name__}: {exc}"
            raise PlatformUnavailable(reason) from exc
        self._hub = hub
        hub.prune_cursors(_REPLIED, 3600.0)  # a reply token lives a minute or so
        log.info("LINE connected as bot %s", self.bot_user_id)

    async def stop(self) -> None:
        self._hub = self._receiving = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._outbound.close()

    def render(self, markdown: str) -> str:
        return to_plain(markdown)

    async def send(self, chunk: OutboundChunk) -> str:
        return (await self.send_batch([chunk]))[0]

    async def send_batch(self, chunks: Sequence[OutboundChunk]) -> list[str]:
        """Up to five consecutive chunks of one delivery in one call: on the reply token of
        the message answered while it is fresh, else as a push with a retry key."""
        if not chunks:
            return []
        if len(chunks) > MAX_MESSAGES:
            raise PermanentDeliveryError(f"LINE sends at most {MAX_MESSAGES} messages a call")
        first = chunks[0]
        texts = [chunk.text for chunk in chunks]
        await self._loading_started(first.address.channel)
        key = first.answers
        taken = self._tokens.take(key) if key else None
        if taken is None and key is not None and first.maybe_sent_since is not None:
            noted = self._noted_reply(key)
            if noted is not None:  # the hub stopped while replying on this token
                return await self._reply_again(*noted, texts)
        if taken is not None and key is not None:
            token, left_s = taken
            self._note_reply(key, token, left_s)  # written ahead: a stop leaves it
            try:
                return await self._outbound.reply(token, texts)
            except ReplyTokenInvalid as exc:
                if self._tokens.doubtful(key):
                    # A reply LINE answered 5xx spent this token, still fresh: delivered.
                    log.info("the reply to %s was delivered despite LINE's 5xx", key)
                    return [f"reply:{token}:{i}" for i in range(len(texts))]
                log.info("reply to %s by push: %s", key, exc)
            except ReplyUnanswered as exc:
                # Tried again on the same token: LINE carries a token out once at most.
                self._tokens.give_back(key, doubtful=True)
                raise MaybeSent(str(exc)) from exc
            except NothingSent as exc:
                self._tokens.give_back(key)
                raise TransientDeliveryError(str(exc)) from exc
            except RateLimited:
                self._tokens.give_back(key)  # refused: the token is still good
                raise
        elif key is not None and self._tokens.doubtful(key):
            # A push now could double a reply LINE did deliver: failed visibly instead.
            raise OutcomeUnknown(
                "LINE answered the reply 5xx and its token expired before another try; "
                "it may have been delivered, so it is not pushed"
            )
        return await self._outbound.push(first.address.channel, texts, retry_key(chunks))

    def _note_reply(self, key: str, token: str, left_s: float) -> None:
        if self._hub is not None:
            good_until = time.time() + left_s
            self._hub.save_cursor(_replied(key), json.dumps([token, good_until]))

    def _noted_reply(self, key: str) -> tuple[str, float] | None:
        raw = self._hub.load_cursor(_replied(key)) if self._hub is not None else None
        if not raw:
            return None
        token, good_until = json.loads(raw)
        return str(token), float(good_until)

    async def _reply_again(self, token: str, good_until: float, texts: list[str]) -> list[str]:
        """The reply a stop cut off, on its token again: LINE carries a token out once, so
        "invalid" while it is still good means the first one was delivered."""
        try:
            return await self._outbound.reply(token, texts)
        except ReplyTokenInvalid as exc:
            if time.time() < good_until:
                log.info("the reply on %s was delivered before the stop", token[:8])
                return [f"reply:{token}:{i}" for i in range(len(texts))]
            raise OutcomeUnknown(
                "the hub stopped while replying and the reply token has expired since: it "
                "may have been delivered, so it is not pushed"
            ) from exc

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        raise PermanentDeliveryError("LINE messages cannot be edited")

    def routers(self) -> Sequence[APIRouter]:
        router = APIRouter()
        router.add_api_route(WEBHOOK_PATH, self._webhook, methods=["POST"], include_in_schema=False)
        return [router]

    async def fetch(self, url: str, max_bytes: int) -> FetchedFile:
        """A file someone attached, when an Anima asks for it (files.py)."""
        if self._hub is None:
            raise AttachmentUnavailable("the LINE adapter is not running")
        return await files.fetch(self._data_api_url, self._token, url, max_bytes)

    # inbound ----------------------------------------------------------------------------

    async def _webhook(self, request: Request) -> Response:
        body = await request.body()
        signature = request.headers.get("X-Line-Signature")
        if not signature:
            return JSONResponse({"detail": "missing X-Line-Signature"}, status_code=401)
        if not webhook.signed(self._secret, body, signature):  # on the raw bytes
            log.warning("LINE webhook with a wrong signature refused")
            return JSONResponse({"detail": "invalid signature"}, status_code=401)
        hub = self._receiving
        if hub is None:  # not acknowledged: LINE redelivers once the hub runs
            return JSONResponse({"detail": "the hub is not running"}, status_code=503)
        try:
            text = body.decode("utf-8")
            data = json.loads(text)
        except ValueError:  # UnicodeDecodeError is one
            return JSONResponse({"detail": "not a LINE webhook: not JSON"}, status_code=400)
        malformed = webhook.payload_problem(data)
        if malformed is not None:
            log.warning("refused a signed LINE webhook: %s", malformed)
            return JSONResponse({"detail": f"not a LINE webhook: {malformed}"}, status_code=400)
        try:
            payload = self._parser.parse(text, signature, as_payload=True)
        except InvalidSignatureError:
            return JSONResponse({"detail": "invalid signature"}, status_code=401)
        except (ValueError, KeyError, TypeError) as exc:
            return JSONResponse({"detail": f"not a LINE webhook: {exc}"}, status_code=400)
        raws = {str(e["webhookEventId"]): e for e in data["events"]}
        destination = str(payload.destination or self.bot_user_id)
        for event in payload.events or ():
            if isinstance(event, MessageEvent):
                raw = raws.get(event.webhook_event_id, {})
                # One event nobody can handle is kept as failed; the others in the body,
                # and LINE's acknowledgement, go ahead (hub.adapter.handle_or_keep).
                await handle_or_keep(
                    hub,
                    self.name,
                    event.webhook_event_id,
                    functools.partial(dict, raw),
                    self._ingest(hub, event, destination, raw),
                )
            else:
                log.debug("LINE %s event not handled", getattr(event, "type", "?"))
        return JSONResponse({})

    async def _ingest(
        self, hub: HubPort, event: MessageEvent, destination: str, raw: dict[str, Any]
    ) -> None:
        source = source_of(event)
        if source is None or source.user is None:
            log.info("LINE message %s has no user id; not kept", event.webhook_event_id)
            return
        name = await self._profiles.name(source)
        inbound = to_inbound(event, destination, name, raw)
        if inbound is None:
            return
        redelivered = bool(event.delivery_context and event.delivery_context.is_redelivery)
        if event.reply_token and not redelivered:
            # A redelivered event's token is likely stale: its answer goes by push.
            self._tokens.put((inbound.event_id, event.message.id), event.reply_token)
        if source.is_dm and not redelivered and inbound.command is None:
            self._start_loading(source.chat)
        try:
            receipt = await hub.receive(inbound)
        except MessageTooLarge as exc:
            log.warning("LINE message %s refused: %s", inbound.event_id, exc)
            await self._answer_now(inbound, exc.notice)
            return
        if receipt.duplicate:
            log.debug("LINE event %s seen before", inbound.event_id)
        elif receipt.reply is not None:
            await self._answer_now(inbound, receipt.reply)

    async def _answer_now(self, inbound: Inbound, text: str) -> None:
        """A command's answer or a refusal, on the message's reply token (best effort)."""
        taken = self._tokens.take(inbound.reply_to) if inbound.reply_to else None
        if taken is None:
            log.info("no reply token left to answer %s: %s", inbound.event_id, text)
            return
        try:
            await self._outbound.reply(taken[0], [to_plain(text)[:MAX_TEXT] or "…"])
        except DeliveryError as exc:
            log.warning("could not answer %s on LINE: %s", inbound.event_id, exc)

    # the loading animation ----------------------------------------------------------------

    def _start_loading(self, user: str) -> None:
        task = asyncio.create_task(self._show_loading(user), name=f"line-loading-{user}")
        self._loading[user] = task
        self._tasks.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._tasks.discard(finished)
            if self._loading.get(user) is finished:
                del self._loading[user]

        task.add_done_callback(done)

    async def _show_loading(self, user: str) -> None:
        try:
            await self._outbound.show_loading(user, LOADING_S)
        except (ApiException, aiohttp.ClientError, TimeoutError, OSError, DeliveryError) as exc:
            log.info("LINE loading animation for %s not shown: %s", user, exc)

    async def _loading_started(self, chat: str) -> None:
        """A reply waits for the chat's loading animation request to be answered: started
        after the reply, it would spin on after the answer arrived."""
        task = self._loading.get(chat)
        if task is not None:
            await asyncio.wait({task}, timeout=5.0)


_REPLIED = "line:replying:"


def _replied(key: str) -> str:
    """The cursor of a reply about to go on a token (its key is the event it answers)."""
    return _REPLIED + hashlib.sha256(key.encode()).hexdigest()[:40]
