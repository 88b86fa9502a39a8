"""The load of `turn_latency.py`: the messages people send (seeded templates in English,
Japanese and Chinese), the project's fake OpenAI server (`animahub_kit/fakes/openai_server.py`) in
a process of its own as the model, and the driver that sends turns through `Hub.port.receive()`
and times the first streamed text and the reply sent by the web adapter.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm loads (through hub.app)

from hub.app import Hub
from hub.delivery.deliveries import Delivery
from hub.messages import Address, AddressKind, Inbound, PlatformUser

ROOT = Path(__file__).resolve().parents[1]
ANIMA = "aria"

TOPICS = (
    "budget review",
    "release checklist",
    "onboarding plan",
    "database migration",
    "customer survey",
    "offsite in Lisbon",
    "hiring loop",
    "billing outage",
    "Q3 roadmap",
    "design system",
    "security audit",
    "load test",
)
NAMES = ("Dana", "Kai", "Mika", "Priya", "Tomás", "Yuki", "Omar", "Lena")
DAYS = ("Monday", "Tuesday", "Thursday", "Friday", "next week", "the end of the month")
TEMPLATES = (
    "Can you remind me what we decided about the {topic}?",
    "{name} said the {topic} slipped to {day}; what does that change for us?",
    "I'm working on the {topic} today, anything I should know before I start?",
    "What did I tell you last time about the {topic}?",
    "Please note: {name} owns the {topic} from now on.",
    "How is the {topic} going? I have not heard from {name} since {day}.",
    "Quick one: when is the {topic} review, and who is in it?",
    "The {topic} failed again this morning and {name} is looking at it.",
    "I prefer short summaries, bullet points, no more than five of them.",
    "Draft a two-line update on the {topic} for {name}, please.",
    "{topic}の件、{name}さんと{day}に話しました。次は何をすればいいですか？",
    "关于{topic}，{name}说{day}之前能完成吗？",
)


def message(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        topic=rng.choice(TOPICS), name=rng.choice(NAMES), day=rng.choice(DAYS)
    )


# ------------------------------------------------------------------ the fake model


@contextmanager
def fake_model() -> Iterator[tuple[str, int]]:
    """animahub_kit/fakes/openai_server.py in its own process: (its URL, its pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "animahub_kit.fakes.openai_server", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"the fake model server did not start: {line!r}")
    try:
        yield line.split()[1], proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ------------------------------------------------------------------ running turns


@dataclass
class Turns:
    first_text: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    without_text: int = 0  # turns whose stream had no text event before it ended


class Driver:
    """Sends turns through `Hub.port.receive()` and waits for what the web adapter gets."""

    def __init__(self, hub: Hub, seed: int) -> None:
        self.hub = hub
        self.rng = random.Random(seed)
        self._sent: dict[str, asyncio.Future[float]] = {}
        hub.outbox.on_sent(self._on_sent)
        self._level = 0

    def _on_sent(self, row: Delivery) -> None:
        future = self._sent.get(row.inbox_id or "")
        if future is not None and not future.done():
            future.set_result(time.perf_counter())

    async def _first_text(self, inbox_id: str) -> float | None:
        async for event in self.hub.port.subscribe(inbox_id):  # what the web adapter relays
            if event.type == "text" and event.text:
                return time.perf_counter()
        return None

    async def turn(self, index: int, turns: Turns) -> None:
        user = PlatformUser("web", f"user{index}", f"User {index}")
        address = Address(
            "web", "local", f"dm:{ANIMA}:user{index}", f"bench{self._level}", AddressKind.DM
        )
        inbound = Inbound(
            event_id=str(uuid.uuid4()),
            address=address,
            sender=user,
            text=message(self.rng),
            mentions=(ANIMA,),
        )
        start = time.perf_counter()
        receipt = await self.hub.port.receive(inbound)
        done = self._sent[receipt.inbox_id] = asyncio.get_running_loop().create_future()
        first = asyncio.create_task(self._first_text(receipt.inbox_id))
        try:
            done_at = await asyncio.wait_for(done, 120)
        finally:
            del self._sent[receipt.inbox_id]
        first_at = await first
        turns.done.append(done_at - start)
        if first_at is None:
            turns.without_text += 1
        else:
            turns.first_text.append(first_at - start)

    async def level(self, conversations: int, per_conversation: int) -> Turns:
        self._level += 1
        turns = Turns()

        async def conversation(index: int) -> None:
            for _ in range(per_conversation):
                await self.turn(index, turns)

        await asyncio.gather(*(conversation(i) for i in range(conversations)))
        return turns
