"""The load generator: conversations on every platform, run concurrently in the fakes' loop.

`build` spreads the conversations over the web chat and the four platforms, two private
chats and two group conversations each; `Load.run` sends each conversation's messages in
order, a short random pause between them, and counts what was sent so that a chaos loop
can time its kills by the load's progress.
"""

from __future__ import annotations

import asyncio
import random
import threading
from dataclasses import dataclass, field

from tests.reliability.conversations import (
    Conversation,
    DiscordChat,
    LineChat,
    SlackDM,
    SlackThread,
    TelegramChat,
    WebChannel,
    WebDM,
    tag,
)
from tests.reliability.world import World

PER_PLATFORM = 4  # two private chats and two group conversations on each platform


def build(world: World, hub_url: str, owner: dict[str, str]) -> list[Conversation]:
    """`owner`: the owner's credential, which the web conversations speak for their users with."""
    convs: list[Conversation] = []
    for i in range(2):
        convs.append(WebDM(world, hub_url, f"webuser{i}", name=f"session{i}", owner=owner))
        convs.append(WebChannel(world, hub_url, f"webposter{i}", name=f"room{i}", owner=owner))
        convs.append(SlackDM(world, f"U0DM{i}", name=f"D0DM{i}"))
        convs.append(SlackThread(world, f"U0CH{i}", name=f"C0CH{i}"))
        convs.append(DiscordChat(world, f"dmuser{i}", name=f"discord-dm{i}"))
        convs.append(DiscordChat(world, f"chuser{i}", name=f"discord-ch{i}", channel=f"ch{i}"))
        convs.append(TelegramChat(world, 5000 + i, name=f"tgdm{i}"))
        convs.append(TelegramChat(world, 6000 + i, name=f"tggroup{i}", group=-1000 - i))
        convs.append(LineChat(world, line_id("U", 0xD0 + i), name=f"linedm{i}"))
        group = line_id("C", i)
        convs.append(LineChat(world, line_id("U", 0xC0 + i), name=f"linegroup{i}", group=group))
    return convs


def line_id(kind: str, n: int) -> str:
    """A LINE user (U) or group (C) id: the letter and 32 hex digits."""
    return kind + f"{n:02x}" * 16


def web_channels(convs: list[Conversation]) -> list[str]:
    return [c.name for c in convs if isinstance(c, WebChannel)]


@dataclass
class Load:
    convs: list[Conversation]
    total: int  # messages over all conversations
    pause_s: tuple[float, float] = (0.1, 0.6)
    seed: int = 15
    sent: int = 0  # messages handed to the platforms so far
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        base, extra = divmod(self.total, len(self.convs))
        self.counts = [base + (1 if i < extra else 0) for i in range(len(self.convs))]

    def progress(self) -> int:
        with self._lock:
            return self.sent

    def _count(self) -> None:
        with self._lock:
            self.sent += 1

    async def first(self) -> None:
        """Every conversation's first message (the hub sees each chat once before chaos:
        Discord lists no bot's DM channels, so a DM it never saw cannot be caught up)."""
        await asyncio.gather(*(self._one(i, c, 0) for i, c in enumerate(self.convs)))

    async def rest(self) -> None:
        await asyncio.gather(*(self._conversation(i, c) for i, c in enumerate(self.convs)))

    async def _conversation(self, number: int, conv: Conversation) -> None:
        pause = random.Random(self.seed * 1000 + number)
        for index in range(1, self.counts[number]):
            await asyncio.sleep(pause.uniform(*self.pause_s))
            await self._one(number, conv, index)

    async def _one(self, number: int, conv: Conversation, index: int) -> None:
        label = tag(number, index)
        await conv.send(label, f"{label} message {index} in {conv.name}")
        self._count()
