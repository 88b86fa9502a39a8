"""The cap on scheduled model calls at once, and a provider's 429 slowing the schedule
instead of failing heartbeats (hub/model/gate.py), against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from animahub_kit.contract.harness import eventually
from animahub_kit.fakes.openai_server import FakeOpenAI
from hub.app import Hub
from hub.clock import ManualClock
from hub.model.client import LiteLLMCalls, LLMError
from hub.model.failure import FailureKind
from hub.model.gate import PACED_AFTER_429, GatedModelClient, LocalGate, paced
from hub.schedule.distill_llm import LLMDistiller
from hub.settings import load_settings
from tests.schedule.conftest import deliveries, open_life, say

COPIES = ("ann", "ben", "cat", "dan", "eve", "fay", "gus", "hal")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


async def model_hub(home: Path, clock: ManualClock, fake: FakeOpenAI, cap: int) -> Hub:
    llm = {"model": "openai/fake", "api_base": f"{fake.url}/v1", "api_key": "x", "workers": 0}
    return await open_life(
        home,
        clock,
        llm=llm,
        scheduler={"enabled": False, "max_model_calls": cap, "rate_limit_pause_s": 30},
        runtime={"person_messages_per_minute": 1e6, "person_burst": 10**6},
    )


async def test_scheduled_model_calls_never_exceed_the_cap_and_none_is_missed(
    home: Path, clock: ManualClock, fake: FakeOpenAI
) -> None:
    hub = await model_hub(home, clock, fake, cap=2)
    try:
        for name in COPIES:
            hub.create_anima(name, "engineer", None)
        await hub.on_tick()
        for name in COPIES:  # something for each heartbeat to think about
            await say(hub, "alice", f"{name}, the build on main is red")
        before = len(fake.requests)
        fake.state.latency_s = 0.2  # long enough for the calls to overlap if allowed to
        fake.state.limit.peak_in_flight = 0
        clock.advance(timedelta(minutes=30))
        await hub.scheduler.run_due()
        assert len(fake.requests) - before == len(COPIES)  # one call per heartbeat
        assert fake.peak_in_flight <= 2
        posted = {d.anima for d in deliveries(hub, "heartbeat")}
        assert set(COPIES) <= posted
    finally:
        await hub.stop()


async def test_a_429_pauses_the_heartbeat_and_it_posts_after_the_pause(
    home: Path, clock: ManualClock, fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    hub = await model_hub(home, clock, fake, cap=4)
    try:
        await say(hub, "alice", "kai, the build on main is red")
        asked = len(fake.requests)
        fake.fail_next(429, retry_after=20)
        fake.queue_reply("The build is still red; I am on it.")
        clock.advance(timedelta(minutes=30))
        with caplog.at_level(logging.INFO):
            run = asyncio.create_task(hub.scheduler.run_due())
            await eventually(lambda: len(fake.requests) > asked, timeout_s=60.0)
            await asyncio.sleep(0.2)
            assert not run.done()  # waiting out the provider's Retry-After, not failed
            assert deliveries(hub, "heartbeat") == []
            assert hub.model_gate.state.limit == 2  # and the cap halved
            clock.advance(timedelta(seconds=20))
            await asyncio.wait_for(run, 60)
        (post,) = deliveries(hub, "heartbeat")
        assert post.text == "The build is still red; I am on it."  # the model's, not offline
        assert "model failed on a scheduled task" not in caplog.text
        assert len(fake.requests) == asked + 2  # asked again once, not twice
    finally:
        await hub.stop()


class Answers:
    """A scheduled call that the test answers: a 429 or a result."""

    def __init__(self) -> None:
        self.started = 0
        self.go: asyncio.Queue[Exception | None] = asyncio.Queue()

    async def __call__(self) -> str:
        self.started += 1
        outcome = await self.go.get()
        if outcome is not None:
            raise outcome
        return "ok"


def limited(after: float | None) -> LLMError:
    return LLMError("429", kind=FailureKind.RATE_LIMITED, retry_after=after)


async def test_a_burst_of_429s_halves_the_limit_once_and_successes_grow_it_back(
    clock: ManualClock,
) -> None:
    gate = LocalGate(8, clock, pause_s=10)
    answers = Answers()
    runs = [asyncio.create_task(paced(gate, answers)) for _ in range(12)]
    await eventually(lambda: answers.started == 8)
    assert gate.state.in_flight == 8 and gate.state.waiting == 4
    for _ in range(8):  # every call in flight comes back 429: one piece of news
        answers.go.put_nowait(limited(None))
    await eventually(lambda: gate.state.in_flight == 0)
    assert gate.state.limit == 4
    assert gate.state.paused_until == clock.now() + timedelta(seconds=10)
    assert answers.started == 8  # nothing is sent during the pause
    clock.advance(timedelta(seconds=10))
    await eventually(lambda: answers.started == 12)
    assert gate.state.in_flight == 4  # at the halved limit
    for _ in range(12 * 3):
        answers.go.put_nowait(None)
    assert sorted(await asyncio.gather(*runs)) == ["ok"] * 12  # none lost, none failed
    assert 4 < gate.state.limit <= 8  # additive increase back towards the cap


async def test_what_waited_out_a_pause_starts_at_the_paced_rate_then_as_slots_allow(
    clock: ManualClock,
) -> None:
    """The calls that waited out a 429's pause all went within the next second when it
    ended (a thousand Animas' heartbeats posted 8 in a second against a mean of 3.4). They
    start at the paced rate now, here two a second, and so does every call for a minute
    after the 429; after that, as slots allow."""
    gate = LocalGate(8, clock, pause_s=10)
    gate.pace(2)
    answers = Answers()
    runs = [asyncio.create_task(paced(gate, answers))]
    await eventually(lambda: answers.started == 1)
    answers.go.put_nowait(limited(None))  # refused: a pause of 10 s
    await eventually(lambda: gate.state.paused_until is not None)
    runs += [asyncio.create_task(paced(gate, answers)) for _ in range(3)]
    await eventually(lambda: gate.state.waiting == 4)
    clock.advance(timedelta(seconds=10))
    await eventually(lambda: answers.started == 2)  # one, not four
    for started in (3, 4, 5):
        clock.advance(timedelta(seconds=0.3))
        await asyncio.sleep(0.05)
        assert answers.started == started - 1  # short of half a second: none yet
        clock.advance(timedelta(seconds=0.2))
        await eventually(lambda: answers.started == started)  # noqa: B023 - awaited at once
    for _ in range(4):
        answers.go.put_nowait(None)
    assert await asyncio.gather(*runs) == ["ok"] * 4  # none lost, none failed
    clock.advance(timedelta(seconds=1))
    fresh = [asyncio.create_task(paced(gate, answers)) for _ in range(2)]
    await eventually(lambda: answers.started == 6)
    await asyncio.sleep(0.05)
    assert answers.started == 6  # a minute after the 429, new calls are spaced too
    clock.advance(timedelta(seconds=0.5))
    await eventually(lambda: answers.started == 7)
    for _ in range(2):
        answers.go.put_nowait(None)
    assert await asyncio.gather(*fresh) == ["ok"] * 2
    clock.advance(PACED_AFTER_429)
    later = [asyncio.create_task(paced(gate, answers)) for _ in range(3)]
    await eventually(lambda: answers.started == 10)  # no 429 for a minute: all at once
    for _ in range(3):
        answers.go.put_nowait(None)
    assert await asyncio.gather(*later) == ["ok"] * 3


async def test_a_run_rate_limited_every_time_fails_as_a_model_failure_at_last(
    clock: ManualClock,
) -> None:
    gate = LocalGate(2, clock, pause_s=1)
    answers = Answers()
    run = asyncio.create_task(paced(gate, answers))
    for tries in range(1, 9):
        await eventually(lambda n=tries: answers.started == n)  # type: ignore[misc]
        answers.go.put_nowait(limited(1))
        await eventually(lambda: gate.state.in_flight == 0)
        clock.advance(timedelta(seconds=1))
    with pytest.raises(LLMError) as failed:
        await run
    assert failed.value.kind is FailureKind.RATE_LIMITED
    assert gate.state.limit == 1


async def test_consolidation_waits_out_a_429_instead_of_falling_back_to_the_rules(
    clock: ManualClock, fake: FakeOpenAI
) -> None:
    """The distillers (consolidation, session summaries) ask through the same gate."""
    settings = load_settings(
        home=Path("/nonexistent"),
        llm={"model": "openai/fake", "api_base": f"{fake.url}/v1", "api_key": "x"},
    )
    gate = LocalGate(2, clock, pause_s=30)
    distiller = LLMDistiller(settings.llm, "openai/fake", GatedModelClient(LiteLLMCalls(), gate))
    fake.fail_next(429, retry_after=None)
    fake.queue_reply('{"summary": "The build was fixed."}')
    ask = asyncio.create_task(distiller._ask("session summary", "Sum up.", "The build."))
    await eventually(lambda: len(fake.requests) == 1, timeout_s=60.0)
    await eventually(lambda: gate.state.paused_until is not None)
    assert not ask.done()
    clock.advance(timedelta(seconds=30))
    assert await asyncio.wait_for(ask, 60) == {"summary": "The build was fixed."}
    assert len(fake.requests) == 2
