"""The contract between the hub and a platform adapter (DESIGN §2, §4).

`hub/` defines these protocols and never imports `adapters/`; concrete adapters are found by
name through the `animahub.adapters` entry point group and wired in by `hub/app.py`. Each
entry point names an `AdapterPlugin`: the adapter's settings model (its `[platform]` section
of hub.toml) and its factory. This module is all an adapter takes from the core besides the
message model (`hub/messages.py`); an import-linter contract keeps it so.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from hub.messages import Address, Inbound, OutboundChunk, PlatformUser, mentioned
from hub.plugins import ENTRY_POINT_GROUP, load_plugins
from hub.settings import PlatformSection, Settings, SettingsSection
from hub.slash import parse_command

if TYPE_CHECKING:
    from fastapi import APIRouter

__all__ = [
    "Adapter",
    "AdapterFactory",
    "AdapterPlugin",
    "AmbiguousName",
    "AttachmentError",
    "AttachmentFetcher",
    "AttachmentTooLarge",
    "AttachmentUnavailable",
    "BatchSender",
    "Caller",
    "CallerKind",
    "Candidate",
    "Capabilities",
    "DeliveryError",
    "FetchedFile",
    "HubPort",
    "MarkdownDialect",
    "MessageTooLarge",
    "NotPermitted",
    "OutcomeUnknown",
    "PermanentDeliveryError",
    "PlatformSection",
    "PlatformState",
    "PlatformUnauthorized",
    "PlatformUnavailable",
    "RateLimited",
    "Receipt",
    "Settings",
    "SettingsSection",
    "TranscriptEntry",
    "TransientDeliveryError",
    "TurnEvent",
    "caller_of",
    "discover",
    "mentioned",
    "parse_command",
]

log = logging.getLogger(__name__)


class MarkdownDialect(StrEnum):
    COMMONMARK = "commonmark"
    SLACK_MRKDWN = "mrkdwn"
    DISCORD = "discord"
    TELEGRAM_HTML = "telegram-html"
    PLAIN = "plain"


@dataclass(frozen=True, slots=True)
class Capabilities:
    max_text: int
    dialect: MarkdownDialect = MarkdownDialect.COMMONMARK
    edits: bool = False
    threads: bool = False
    reactions: bool = False
    slash_commands: bool = False
    # Chunks one `send_batch` call can carry (LINE's reply: 5); 1: chunk by chunk.
    batch: int = 1


class MessageTooLarge(ValueError):
    """Raised by `HubPort.receive` for a message over `runtime.max_message_bytes`."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"message is {size} bytes; the limit is {limit} bytes")
        self.size = size
        self.limit = limit

    @property
    def notice(self) -> str:
        """What an adapter tells the sender, in the words every platform uses."""
        return f"Your message was not delivered to the Animas: {self}."


class PlatformState(StrEnum):
    STARTING = "starting"
    UP = "up"
    DOWN = "down"  # unreachable or failing; retried
    UNAUTHORIZED = "unauthorized"  # the platform refused the credentials; not retried
    STOPPED = "stopped"


class PlatformUnavailable(Exception):
    """`start()` could not reach the platform (network, 5xx, timeout); the hub retries."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PlatformUnauthorized(Exception):
    """The platform refused the credentials (401, invalid token): retrying cannot help."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DeliveryError(Exception):
    """A send failed; the outbox decides from the subclass whether to retry."""


class RateLimited(DeliveryError):
    def __init__(self, retry_after: float, detail: str = "") -> None:
        super().__init__(detail or f"rate limited, retry after {retry_after:.1f}s")
        self.retry_after = retry_after


class TransientDeliveryError(DeliveryError):
    """Worth retrying with backoff (network error, 5xx)."""


class MaybeSent(TransientDeliveryError):
    """Worth retrying, but this attempt may have been carried out (a 5xx after the platform
    acted): the chunk stays marked as maybe sent (`OutboundChunk.maybe_sent_since`), so the
    retry, also after a restart, can check before sending again."""


class PermanentDeliveryError(DeliveryError):
    """Retrying cannot help (channel gone, bot removed, message rejected)."""


class OutcomeUnknown(DeliveryError):
    """The request may have reached the platform, but no answer came (a read timeout, a
    connection dropped after the request was written). The outbox does not send it again,
    since that could double the message: the delivery fails visibly instead. An adapter whose
    platform offers an idempotency key retries safely itself and never raises this."""


@dataclass(frozen=True, slots=True)
class Receipt:
    """What ingress answers an adapter: the inbox id, and whether the event was seen before.

    `reply` is the answer to a slash command, for the adapter to show as the command's
    immediate (usually private) response; ordinary messages are answered via the outbox.
    """

    inbox_id: str
    duplicate: bool
    reply: str | None = None


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """A live event of a turn, for adapters that stream (web SSE, edit-streaming)."""

    type: str  # "text" | "done" | "error"
    text: str = ""
    anima: str = ""


@dataclass(frozen=True, slots=True)
class TranscriptEntry:
    """One message in a conversation or channel, as platforms without storage show it."""

    id: str
    address: str
    author: str
    author_kind: str  # "person" | "anima"
    text: str
    at: str
    anima: str | None = None
    # A person's message: the id its platform gave it (the web chat's own message_id), so
    # a page that sent it knows it again, though the text kept is redacted.
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class ConversationEntry:
    """One conversation (a thread) of a place, as the web chat lists them."""

    thread: str  # the web chat's session id
    first_text: str
    started_at: str
    last_at: str
    messages: int  # from people


class CallerKind(StrEnum):
    """How an HTTP caller was recognised (hub/api/auth.py)."""

    OWNER = "owner"  # the data folder's owner.key, or a session opened by an owner's link
    ADMIN_TOKEN = "admin token"  # `[server] api_token`
    TOKEN = "token"  # a person's own API token
    SESSION = "session"  # the web chat's cookie, opened by a sign-in link


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent an HTTP request, as the hub's edge established it (never from the body)."""

    person_id: str
    name: str
    kind: CallerKind

    @property
    def may_act_for_others(self) -> bool:
        """The owner and the admin token may name another person (`user`)."""
        return self.kind in (CallerKind.OWNER, CallerKind.ADMIN_TOKEN)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A person a name may mean: their id, name and accounts (`platform:user_id`)."""

    id: str
    name: str
    accounts: tuple[str, ...] = ()

    def __str__(self) -> str:
        accounts = ", ".join(self.accounts) or "no account"
        return f"{self.name} ({self.id}: {accounts})"


class AmbiguousName(LookupError):
    """A name where a person was wanted, and people it may mean: a display name is what a
    platform says, which anyone may choose, so it never picks a person on its own. The
    caller names one by their person id (or asks for someone new). The API answers 409,
    with the candidates."""

    def __init__(self, name: str, candidates: Sequence[Candidate]) -> None:
        listed = "; ".join(str(c) for c in candidates)
        super().__init__(
            f"{name!r} is a name, not a person id: it may be {listed}. Give the person id "
            "(or ask for someone new)"
        )
        self.name = name
        self.candidates = tuple(candidates)
        self.ids = tuple(c.id for c in candidates)


class NotPermitted(PermissionError):
    """The caller may not do this (act for another person): an adapter answers 403."""


def is_transient(error: BaseException) -> bool:
    """A failure that passes by itself (the database is unreachable): the update must come
    again, not be put aside as failed."""
    from sqlalchemy.exc import DBAPIError

    return isinstance(error, DBAPIError) and (
        error.connection_invalidated or type(error).__name__ in _UNAVAILABLE
    )


_UNAVAILABLE = frozenset({"OperationalError", "InterfaceError"})


async def handle_or_keep(
    hub: HubPort,
    platform: str,
    update_id: str,
    raw: Callable[[], Any],
    handling: Awaitable[None],
) -> bool:
    """Awaits `handling` (one platform update normalized and handed to the hub). When it
    raises anything but a transient failure, the update is kept as failed
    (`HubPort.update_failed`: logged, shown in health) and False returned: the adapter
    acknowledges it and moves on, so one update nobody can handle never stalls a platform.
    A transient failure is raised: the update is not acknowledged and comes again."""
    try:
        await handling
    except Exception as exc:  # not hidden: logged, kept as failed and shown in health
        if is_transient(exc):
            raise
        log.exception("%s update %s could not be handled; kept as failed", platform, update_id)
        hub.update_failed(platform, update_id, exc, _readable(raw))
        return False
    return True


def _readable(raw: Callable[[], Any]) -> Any:
    try:
        return raw()
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # kept without its JSON
        return {"unreadable": f"{type(exc).__name__}: {exc}"}


def caller_of(scope: Mapping[str, Any]) -> Caller:
    """The caller of an /api request (its ASGI scope); the edge puts it there before any
    route runs, and refuses the request when it cannot say who sent it."""
    caller = scope.get("state", {}).get("caller")
    if not isinstance(caller, Caller):
        raise LookupError("no caller on this request: is it outside /api?")
    return caller


class Receiving(Protocol):
    """Every adapter: a platform's events into the hub."""

    async def receive(self, inbound: Inbound) -> Receipt:
        """Store `inbound` (once per event id) and start its turn; the receipt says which
        inbox row holds it, whether it came before, and a command's answer."""
        ...

    def update_failed(self, platform: str, update_id: str, error: BaseException, raw: Any) -> None:
        """An update this hub could not handle (normalizing or storing it raised): kept as
        failed for the operator (hub/inbound/failed_updates.py), so the adapter can move past it.
        Use `handle_or_keep`, which does it for every failure but a transient one."""
        ...


class Reporting(Protocol):
    """An adapter with a long-lived connection: whether it holds."""

    def report(self, platform: str, state: PlatformState, reason: str = "") -> None:
        """A long-lived connection was lost (`DOWN`, with why) or is back (`UP`)."""
        ...


class Cursors(Protocol):
    """Small values an adapter keeps across restarts (Telegram's update offset, a preview's
    message), in the hub's database under the adapter's own keys."""

    def load_cursor(self, key: str) -> str | None:
        """A value the adapter saved with `save_cursor`."""
        ...

    def save_cursor(self, key: str, value: str) -> None:
        """Store a small value durably (a key at most 200 characters; a value at most 2,000)."""
        ...

    def forget_cursor(self, key: str) -> None:
        """Delete a saved value (nothing happens when there is none)."""
        ...

    def prune_cursors(self, prefix: str, older_than_s: float) -> int:
        """Delete the values under `prefix` not saved for `older_than_s`; how many went."""
        ...


class Conversing(Protocol):
    """An adapter that is itself the place people talk (the web chat): the Animas, who a
    request speaks as, and the hub's record of what was said."""

    def anima_names(self) -> list[str]: ...

    def speaker(self, caller: Caller, platform: str, user: str | None) -> PlatformUser:
        """Who a request's message is from on `platform`: the caller, or the person named
        `user` when the caller may act for others (audited). Raises `NotPermitted` when a
        caller names someone else without that right."""
        ...

    def transcript(self, address: Address, limit: int) -> list[TranscriptEntry]: ...

    def conversations(
        self, address: Address, limit: int, text: str = ""
    ) -> list[ConversationEntry]:
        """The threads of `address`'s channel, the latest active first; with `text`, only
        those in which someone said it (case-insensitive, the Anima's replies included)."""
        ...


class Watching(Protocol):
    """An adapter that shows a reply as it is written (the web chat's stream, a platform's
    edited preview), before the outbox sends it."""

    def subscribe(self, inbox_id: str) -> AsyncIterator[TurnEvent]:
        """The events of the turn answering inbox row `inbox_id`, live, else as stored."""
        ...

    def pending_delivery(self, address: Address, besides: str | None = None) -> bool:
        """Whether a message to `address` waits in the outbox (not yet sent, not failed),
        other than those answering the inbox row `besides`: what an adapter posts on its
        own (a preview) must not overtake it."""
        ...


class ConnectionHold(Protocol):
    """The right to keep one platform connection that one process at a time may keep."""

    async def acquire(self) -> None:
        """Return once this process holds it (at once when it is the only hub)."""
        ...

    def held(self) -> bool:
        """Whether it is still held: checked before each use of the connection (each long
        poll), and false in time for the next holder never to meet this one."""
        ...

    async def release(self) -> None: ...


class Connecting(Protocol):
    """An adapter whose inbound is a connection one process at a time may keep (Telegram's
    long poll: a second poller is refused with 409)."""

    def connection(self, key: str, quiet_s: float) -> ConnectionHold:
        """The hold on connection `key` (platform and account, e.g. `telegram:<bot id>`).
        With several hub workers it is a lease: a new holder starts only `quiet_s` after
        taking it over, so the previous holder's last request (a long poll of up to that
        long) has ended. One hub holds every connection at once."""
        ...


class HubPort(Receiving, Reporting, Cursors, Watching, Conversing, Connecting, Protocol):
    """What an adapter may ask of the hub, as the small ports above: an adapter's helpers
    take the one they use. Everything else flows through the outbox."""


@runtime_checkable
class Adapter(Protocol):
    name: str
    capabilities: Capabilities

    async def start(self, hub: HubPort) -> None:
        """Connect. Raise `PlatformUnavailable` or `PlatformUnauthorized` when that fails,
        leaving nothing half-open: the hub calls `start` again later (DESIGN §4)."""
        ...

    async def stop(self) -> None: ...

    def render(self, markdown: str) -> str:
        """Convert CommonMark into the platform's dialect (before chunking)."""
        ...

    async def send(self, chunk: OutboundChunk) -> str:
        """Send one chunk; return its platform message id. Raise a DeliveryError on failure."""
        ...

    async def edit(self, address: Address, message_id: str, text: str) -> None: ...

    def routers(self) -> Sequence[APIRouter]:
        """HTTP routes the platform needs (webhooks, pages); mounted by the API server."""
        ...


@runtime_checkable
class BatchSender(Protocol):
    """An adapter whose `capabilities.batch` > 1 sends several chunks in one call."""

    async def send_batch(self, chunks: Sequence[OutboundChunk]) -> list[str]:
        """Send consecutive chunks of one delivery at once; one id each, all or none."""
        ...


@runtime_checkable
class Linker(Protocol):
    """An adapter whose sent messages have a link a person can open (a Notion page): the
    hub posts it where a report was asked for."""

    def link(self, address: Address, message_id: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class FetchedFile:
    """An attachment's content, as `AttachmentFetcher.fetch` downloaded it."""

    data: bytes
    content_type: str = ""  # what the platform said, "" when it said nothing
    name: str = ""


class AttachmentError(Exception):
    """An attachment could not be read; the message says why, for the model to relay."""


class AttachmentTooLarge(AttachmentError):
    """The file is over the cap: known from the platform's stated size (nothing was
    downloaded), or found while streaming (the download was abandoned at the cap)."""

    def __init__(self, size: int | None, limit: int) -> None:
        known = f"{size} bytes" if size is not None else "larger than that"
        super().__init__(f"the file is {known}; the limit is {limit} bytes")
        self.size = size
        self.limit = limit


class AttachmentUnavailable(AttachmentError):
    """The platform no longer has the file (expired, deleted), does not know its id, or
    cannot be reached."""


@runtime_checkable
class AttachmentFetcher(Protocol):
    """An adapter that can download the attachments it normalized (optional). Called only
    when an Anima asks for a file (the `read_attachment` tool), never on arrival."""

    async def fetch(self, url: str, max_bytes: int) -> FetchedFile:
        """Download the attachment named by `url` (the `Attachment.url` the adapter gave,
        e.g. `telegram-file:<file_id>`), at most `max_bytes` of it. Raise
        `AttachmentTooLarge` before downloading when the platform states a larger size,
        and again while streaming past the cap; `AttachmentUnavailable` for an unknown,
        expired or unreachable file."""
        ...


PS = TypeVar("PS", bound=PlatformSection)
# Builds an adapter from its own section (the hub calls it only when the section is enabled).
AdapterFactory = Callable[[Any], "Adapter"]


@dataclass(frozen=True, slots=True)
class AdapterPlugin(Generic[PS]):
    """What an `animahub.adapters` entry point names: the model of the adapter's own
    settings section (`[slack]` for the entry point `slack`) and its factory, which the hub
    hands that section alone, and only when it is enabled. Every settings load imports the
    module holding the plugin: it imports the settings model alone, and the factory imports
    the adapter and its platform SDK (adapters/web/__init__.py; docs/architecture.md,
    "Boundaries")."""

    settings: type[PS]
    build: Callable[[PS], Adapter]


def discover(names: Sequence[str] | None = None) -> dict[str, AdapterPlugin[Any]]:
    """Adapter plugins registered under the entry point group, by platform name; LookupError
    naming those of `names` no adapter registers."""
    found: dict[str, AdapterPlugin[Any]] = {}
    for name, plugin in load_plugins(names).items():
        if not isinstance(plugin, AdapterPlugin):
            raise TypeError(f"the {ENTRY_POINT_GROUP} entry point {name!r} is not an AdapterPlugin")
        found[name] = plugin
    return found


def build_enabled(
    settings: Settings, factories: Mapping[str, AdapterFactory] | None = None
) -> dict[str, Adapter]:
    """The adapters whose sections are enabled, each built from its own section alone (by
    `factories`, else by the installed plugins)."""
    if factories is None:
        factories = {name: plugin.build for name, plugin in discover().items()}
    built: dict[str, Adapter] = {}
    for name, build in factories.items():
        section = settings.platform(name, PlatformSection)
        if section.enabled:
            built[name] = build(section)
    return built
