"""Storms: the fakes answer 429 with retry-after to half the sends for a while, then bursts
of 5xx; every delivery completes, none twice, order kept per channel, and every retry after
a 429 waited the retry-after (checked on the times the fakes recorded,
animahub_kit/fakes/faults.py).

A real `animahub start` with its default outbox settings (max_attempts 8, backoff from 1 s
doubling) and the real SDKs against the fakes; a load runs through the whole storm so that
sends of every kind (previews, edits, replies, pushes) meet it. Memory is off: the storm is
the outbox's and the adapters' business, and embedding every turn would only slow the run
(the crash suite checks memory). `ANIMAHUB_SUITE_SIZE=full` runs a one-minute 429 storm.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from animahub_kit.fakes.faults import Storm
from tests.e2e.hubproc import HubProcess, cli, free_port
from tests.reliability.chaos import wait_until
from tests.reliability.conversations import (
    Conversation,
    DiscordChat,
    LineChat,
    SlackDM,
    SlackThread,
    TelegramChat,
)
from tests.reliability.load import Load, line_id
from tests.reliability.verdict import all_answered, judge
from tests.reliability.world import World
from tests.sizes import size

pytestmark = pytest.mark.e2e

STORM_S = size(ci=20, full=60)  # 429s to half the sends for this long
BURSTS = 3  # then this many bursts of 5xx
BURST_S = size(ci=3, full=5)
GAP_S = size(ci=3, full=5)
MESSAGES = size(ci=48, full=240)


@pytest.fixture
def world() -> Iterator[World]:
    opened = World()
    try:
        yield opened
    finally:
        opened.close()


def conversations(world: World) -> list[Conversation]:
    """A private chat and a group conversation on each platform (one per channel, so a
    channel's order and its retry-after are those of one conversation)."""
    return [
        SlackDM(world, "U0STORM0", name="D0STORM0"),
        SlackThread(world, "U0STORM1", name="C0STORM1"),
        DiscordChat(world, "stormdm", name="discord-storm-dm"),
        DiscordChat(world, "stormch", name="discord-storm-ch", channel="storm"),
        TelegramChat(world, 7000, name="tgstormdm"),
        TelegramChat(world, 7001, name="tgstormgroup", group=-2000),
        LineChat(world, line_id("U", 0xE0), name="linestormdm"),
        LineChat(world, line_id("U", 0xE1), name="linestormgroup", group=line_id("C", 0xE1)),
    ]


def deliveries(hub: HubProcess, status: str | None = None) -> list[dict[str, object]]:
    params: dict[str, str | int] = {"limit": 500}
    if status is not None:
        params["status"] = status
    response = httpx.get(
        f"{hub.url}/api/deliveries", params=params, headers=hub.owner(), timeout=30
    )
    response.raise_for_status()
    rows: list[dict[str, object]] = response.json()
    return rows


@pytest.mark.timeout(size(ci=400, full=1200))
def test_storm_every_delivery_completes_once_in_order_after_its_waits(
    tmp_path: Path, world: World
) -> None:
    home = tmp_path / "home"
    assert cli(home, "init", "--demo").returncode == 0
    convs = conversations(world)
    storm = Storm(rate_limit_s=STORM_S, bursts=BURSTS, burst_s=BURST_S, gap_s=GAP_S)
    port = free_port()
    env = {**world.hub_env(port), "ANIMAHUB_MEMORY__ENABLED": "false"}
    hub = HubProcess(home, port, **env).start(timeout=120)
    try:
        world.set_faults(storm)
        per_conversation = MESSAGES // len(convs)
        # Spread each conversation's messages over the storm, its bursts and a little after.
        spacing = storm.length_s / per_conversation
        load = Load(convs, MESSAGES, pause_s=(spacing * 0.5, spacing * 1.5))
        storm.start()
        world.run(load.first())
        world.run(load.rest(), timeout=storm.length_s * 4 + 120)
        wait_until(storm.over, storm.length_s + 60)
        answered = wait_until(lambda: world.run(all_answered(convs)), 300, home / "hub.db")
        time.sleep(3.0)  # a doubled reply would show by now
        verdict = world.run(judge(convs))
        rows = deliveries(hub)
    finally:
        world.set_faults(None)
        hub.stop()
    recorder = storm.recorder
    early = recorder.early_retries()
    statuses = sorted({str(r["status"]) for r in rows})
    waits = [
        (e.refused.platform, e.refused.method, e.next.method, round(e.early_by, 3)) for e in early
    ]
    print(
        f"\nstorm: {verdict.messages} messages, {len(rows)} deliveries {statuses}, "
        f"{len(recorder.attempts)} send attempts, {recorder.count('429')} answered 429, "
        f"{recorder.count('5xx')} answered 5xx, {len(early)} early retries {waits[:8]}, "
        f"most attempts of a delivery {max((int(str(r['attempts'])) for r in rows), default=0)}"
    )
    for name, items in verdict.problems().items():
        print(f"{name} ({len(items)}): {items[:12]}")
    failed = [(r["address"], r["error"]) for r in rows if r["status"] != "sent"]
    for address, error in failed[:12]:
        print(f"not sent: {address}: {error}")
    assert recorder.count("429") > 0 and recorder.count("5xx") > 0  # the storm happened
    assert failed == []
    assert verdict.problems() == {}
    assert waits == []
    assert answered
