"""What every platform's contract harness provides (DESIGN §9).

A harness runs a real `Hub` with the platform's real adapter, whose real SDK talks to a local
fake of the platform (animahub_kit/fakes/). The contract cases (cases.py) drive it only
through this protocol: it speaks as people on the platform, and reads what the bot posted as
the fake server recorded it. Nothing of our own code is mocked.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from animahub_kit.fakes.faults import FaultPolicy
from hub.adapter import AdapterFactory, discover
from hub.app import Hub
from hub.messages import Address
from hub.settings import Settings, SettingsSection, installed_sections, load_settings
from hub.turns.llm import TurnContext
from hub.turns.runtime import Responders

# A code fence in the middle of a 10,000-character reply: chunking must never break it.
FENCE = "```python\n" + "\n".join(f"print('line {i:03d}')" for i in range(120)) + "\n```"
LONG_REPLY = (
    "\n\n".join(f"Paragraph {i}. " + "All work and no play. " * 12 for i in range(12))
    + "\n\n"
    + FENCE
    + "\n\n"
    + "\n\n".join(f"Closing {i}. " + "Makes Jack a dull boy. " * 12 for i in range(16))
)
STREAM_PIECES = ("Thinking", " about", " it:", " the answer", " is 42.")
PAUSED_PIECES = ("Partial answer ", "and the rest.")  # the second waits for `resume`
# The Animas of every contract hub: mika answers by default, aria and kai are reached by name.
DEMO_ANIMAS = (
    ("mika", "manager", None),
    ("aria", "researcher", "mika"),
    ("kai", "engineer", "mika"),
)


class ScriptedResponder:
    """Answers by keyword so each contract case gets the reply shape it needs.

    "LONG" -> LONG_REPLY; "STREAM" -> STREAM_PIECES, slowly (slower than the first
    preview waits, adapters/streaming.py); "PAUSE" -> the first of
    PAUSED_PIECES, then the rest once `resume` is set; otherwise "echo: <text>".
    """

    def __init__(self, piece_delay_s: float = 0.5) -> None:
        self.piece_delay_s = piece_delay_s
        self.seen: list[TurnContext] = []
        self.resume = asyncio.Event()

    async def stream(self, ctx: TurnContext) -> AsyncIterator[str]:
        self.seen.append(ctx)
        if "LONG" in ctx.text:
            yield LONG_REPLY
        elif "STREAM" in ctx.text:
            for piece in STREAM_PIECES:
                await asyncio.sleep(self.piece_delay_s)
                yield piece
        elif "PAUSE" in ctx.text:
            yield PAUSED_PIECES[0]
            await self.resume.wait()
            yield PAUSED_PIECES[1]
        else:
            yield f"echo: {ctx.text}"


@dataclass(frozen=True, slots=True)
class Sent:
    """A message a person sent on the platform, as the harness injected it."""

    event_id: str  # what the adapter must use as Inbound.event_id (the dedup key)
    message_id: str  # the platform's id of the message
    channel: str  # the platform's channel id (a DM channel for DMs)
    thread: str | None  # the thread it was posted in, if any


@dataclass(frozen=True, slots=True)
class Posted:
    """A message the bot posted, as the fake server recorded it (text after all edits)."""

    id: str
    channel: str
    text: str
    thread: str | None  # the thread it was posted in (Slack thread_ts, Discord thread id)
    reply_to: str | None  # the message it replies to (Discord message_reference)
    edits: int  # how many times it was edited after being posted


class Harness(Protocol):
    platform: str
    hub: Hub
    responder: ScriptedResponder
    max_text: int  # the platform's message limit (DESIGN §8) the adapter must respect
    replies_by_reference: bool  # a reply references the triggering message (Discord)

    def reply_thread(self, sent: Sent) -> str | None:
        """The thread the reply to `sent` must land in (Slack answers a channel message in
        a thread under it; Discord replies in place, by reference)."""
        ...

    def user_key(self, user: str) -> str:
        """The hub identity of a person the harness speaks as: `slack:U0ALICE`."""
        ...

    async def dm(self, user: str, text: str) -> Sent: ...

    async def say(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        mention: bool = False,
        thread: str | None = None,
    ) -> Sent:
        """Post in a channel (by the harness's logical name, e.g. "general"); `mention`
        prefixes the platform's mention of the bot."""
        ...

    async def edit(self, user: str, sent: Sent, text: str) -> Sent:
        """Edit an earlier message; returns the edit event (its event_id is new)."""
        ...

    async def attach(self, user: str, channel: str, text: str, filename: str, url: str) -> Sent:
        """A message with one file attached, mentioning the bot."""
        ...

    async def redeliver(self, sent: Sent) -> None:
        """Deliver the same event again, as the platform does when it retries."""
        ...

    async def forged(self) -> int:
        """Deliver an event with a forged signature; return the HTTP status the hub gave."""
        ...

    async def stale(self) -> int:
        """Deliver a correctly signed event that is too old (a replay); return the status."""
        ...

    def posted(self) -> list[Posted]:
        """Everything the bot posted, in order."""
        ...

    def rate_limit_posts(self, times: int, retry_after: float) -> None:
        """Answer the next `times` post requests with 429 and this retry-after."""
        ...

    def post_requests(self) -> int:
        """Post requests the fake received, the rate-limited ones included."""
        ...

    def set_faults(self, policy: FaultPolicy | None) -> None:
        """Let `policy` decide every send (post, edit, reply, push) the fake receives."""
        ...

    def drop_next_send_response(self) -> None:
        """Carry out the next post request (the message exists on the platform), then close
        the connection without answering: the adapter cannot know whether it was posted."""
        ...

    def auth_attempts(self) -> int:
        """Requests the fake received that check the bot's credentials (Slack `auth.test`,
        Discord `GET /users/@me`, Telegram `getMe`, LINE `GET /v2/bot/info`)."""
        ...

    async def platform_up(self) -> None:
        """Start the fake platform that was down when the hub started (on the same port the
        hub was configured with)."""
        ...

    def address(self, channel: str) -> Address:
        """The hub's address of a channel (by logical name), for a proactive post there."""
        ...

    def attachment_url(self, url: str) -> str:
        """What the hub stores as the URL of a file `attach()` attached from `url` (Telegram
        gives file ids, not URLs: `telegram-file:<id>`)."""
        ...


class Opener(Protocol):
    """Opens a platform's harness the way a case needs it: `platform_down`, the fake is not
    running when the hub starts (`Harness.platform_up` starts it); `wrong_credentials`, the
    hub is configured with a token the fake refuses."""

    def __call__(
        self, *, platform_down: bool = False, wrong_credentials: bool = False
    ) -> AbstractAsyncContextManager[Harness]: ...


FEATURES = frozenset(
    {"edits", "threads", "streaming", "drafts", "replay_window", "mention_routing", "captions"}
)


@dataclass(frozen=True, slots=True)
class ContractPlatform:
    """One platform the contract runs on.

    `open_harness(tmp_path, *, platform_down=False, **wrong_credentials)` opens a hub with
    the platform's adapter against its fake and yields a `Harness`; `platform_down`: the
    fake is not running when the hub starts (`Harness.platform_up` starts it).
    `wrong_credentials` are the `open_harness` arguments that configure the hub with a token
    the fake refuses; `features` those of FEATURES the platform has.
    """

    open_harness: Callable[..., AbstractAsyncContextManager[Harness]]
    features: frozenset[str]
    wrong_credentials: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = self.features - FEATURES
        if unknown:
            raise ValueError(
                f"unknown contract features {sorted(unknown)}; known: {sorted(FEATURES)}"
            )


def free_port() -> int:
    """A port that is free now, for a fake that starts later than the hub is configured."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def harness_settings(
    home: Path,
    *,
    models: Mapping[str, type[SettingsSection]] | None = None,
    **sections: Any,
) -> Settings:
    """Settings for a contract hub: no memory, no web, no scheduler, fast outbox (unless
    `sections` say otherwise). `models`: the settings models of adapters not installed as
    entry points (an adapter being written, animahub_kit/example/), beside those that are."""
    defaults: dict[str, Any] = {
        "hub": {"default_anima": "mika", "admins": []},
        "memory": {"enabled": False},
        "web": {"enabled": False},
        "scheduler": {"enabled": False},
        "outbox": {"poll_interval_s": 0.05, "backoff_base_s": 0.05},
    }
    merged = {**defaults, **sections}
    # A named owner, not the OS user the tests happen to run as (often root, an admin here).
    merged["hub"] = {"owner": "Olivia", **merged["hub"]}
    # Every platform's DMs open: the cases speak as whoever they like (no pairing first).
    merged.setdefault("people", {"dm_policy": {}})
    installed = None if models is None else {**installed_sections(), **models}
    return load_settings(home=home, sections=installed, **merged)


async def start_hub(
    settings: Settings,
    platform: str,
    factory: AdapterFactory,
    responder: ScriptedResponder,
    *,
    with_web: bool = False,
) -> Hub:
    """The hub with the platform's adapter (and the web chat's, `with_web`)."""
    factories = {platform: factory}
    if with_web:
        factories["web"] = discover(["web"])["web"].build
    hub = Hub(
        settings,
        adapter_factories=factories,
        responders=Responders(responder, responder),
    )
    await hub.start()
    add_demo_animas(hub)
    return hub


def add_demo_animas(hub: Hub) -> None:
    """Create DEMO_ANIMAS that the hub's data folder does not have yet."""
    hub.animas.load()
    for name, role, supervisor in DEMO_ANIMAS:
        if name not in hub.animas:
            hub.create_anima(name, role, supervisor)


async def eventually(check: Callable[[], Any], timeout_s: float = 10.0) -> Any:
    """Poll until `check()` returns something truthy; fail with its last value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout_s}s (last: {value!r})")
        await asyncio.sleep(0.02)
