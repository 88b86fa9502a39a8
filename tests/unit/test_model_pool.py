"""Model workers: litellm calls in child processes, against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest

from animahub_kit.contract.harness import eventually
from hub.model.client import LLMError, RoundPiece, Usage
from hub.model.pool import ModelWorkers


@pytest.fixture
async def pool() -> AsyncIterator[ModelWorkers]:
    workers = ModelWorkers(1)
    workers.start()
    try:
        yield workers
    finally:
        await workers.stop()


def kwargs(fake: Any) -> dict[str, Any]:
    return {"model": "openai/fake", "api_base": f"{fake.url}/v1", "api_key": "x", "num_retries": 0}


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


async def collect(pieces: AsyncIterator[RoundPiece]) -> list[RoundPiece]:
    return [piece async for piece in pieces]


def text_of(pieces: list[RoundPiece]) -> str:
    return "".join(p for p in pieces if isinstance(p, str))


async def held_call(pool: ModelWorkers, fake: Any) -> asyncio.Task[list[RoundPiece]]:
    """A call that has reached the fake server and waits there until released."""
    fake.hold_next()
    call = asyncio.create_task(collect(pool.stream_round(ask("hi"), kwargs(fake))))
    await eventually(lambda: fake.held_count == 1, timeout_s=30)
    return call


async def test_streams_text_tool_calls_and_completions(
    pool: ModelWorkers, fake_openai: Any
) -> None:
    text = "Hello from a worker process, in several streamed pieces."
    fake_openai.queue_reply(text)
    pieces = await collect(pool.stream_round(ask("hi"), kwargs(fake_openai)))
    *texts, used = pieces
    assert all(isinstance(p, str) for p in texts)
    assert "".join(str(p) for p in texts) == text
    # what the server counted (one word and 3 per message in, nine words out), not an estimate
    assert used == Usage(prompt=4, completion=9)

    fake_openai.queue_tool_call("current_time", {"timezone": "UTC"}, call_id="call_1")
    pieces = await collect(pool.stream_round(ask("time?"), kwargs(fake_openai)))
    message, used = pieces[-2:]
    assert isinstance(used, Usage) and used.prompt == 4 and used.completion > 0
    assert isinstance(message, dict) and message["role"] == "assistant"
    assert message["tool_calls"][0]["id"] == "call_1"
    assert message["tool_calls"][0]["function"]["name"] == "current_time"

    fake_openai.queue_reply('{"summary": "done"}')
    assert await pool.complete(ask("json"), kwargs(fake_openai)) == '{"summary": "done"}'
    assert [r.get("stream", False) for r in fake_openai.requests] == [True, True, False]


async def test_errors_keep_their_retryability(pool: ModelWorkers, fake_openai: Any) -> None:
    fake_openai.fail_next(status=429)
    with pytest.raises(LLMError) as limited:
        await collect(pool.stream_round(ask("hi"), kwargs(fake_openai)))
    assert limited.value.retryable and "429" in str(limited.value)
    fake_openai.fail_next(status=401)
    with pytest.raises(LLMError) as refused:
        await pool.complete(ask("hi"), kwargs(fake_openai))
    assert not refused.value.retryable


async def test_a_large_prompt_passes_the_pipe(pool: ModelWorkers, fake_openai: Any) -> None:
    long = "word " * 400_000  # 2 MB: far over asyncio's default 64 KiB line limit
    fake_openai.queue_reply("read it")
    pieces = await collect(pool.stream_round(ask(long), kwargs(fake_openai)))
    assert text_of(pieces) == "read it"
    assert fake_openai.requests[-1]["messages"][0]["content"] == long


async def test_a_dead_worker_fails_its_calls_as_retryable_and_is_replaced(
    pool: ModelWorkers, fake_openai: Any
) -> None:
    call = await held_call(pool, fake_openai)
    (pid,) = pool.pids()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(LLMError) as died:
        await call
    assert died.value.retryable and "exited" in str(died.value)
    await eventually(lambda: fake_openai.abandoned_count == 1)  # its connection died with it

    fake_openai.queue_reply("back again")
    pieces = await collect(pool.stream_round(ask("hi"), kwargs(fake_openai)))
    assert text_of(pieces) == "back again"
    assert pool.pids() != [pid]
    assert pool.status() == {"configured": 1, "running": 1, "ready": 1}


async def test_a_caller_that_stops_listening_cancels_the_call(
    pool: ModelWorkers, fake_openai: Any
) -> None:
    call = await held_call(pool, fake_openai)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    # The cancel reached the worker, which dropped the request: its connection closed.
    await eventually(lambda: fake_openai.abandoned_count == 1)
    fake_openai.queue_reply("still serving")
    pieces = await collect(pool.stream_round(ask("hi"), kwargs(fake_openai)))
    assert text_of(pieces) == "still serving"


async def test_stop_ends_the_workers() -> None:
    workers = ModelWorkers(2)
    workers.start()
    await eventually(lambda: workers.status()["ready"] == 2, timeout_s=60)
    pids = workers.pids()
    await workers.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(LLMError):
        await workers.complete(ask("hi"), {"model": "openai/x"})


async def test_idle_workers_are_ended_and_the_next_call_starts_them_again(
    fake_openai: Any,
) -> None:
    workers = ModelWorkers(1, idle_s=0.5)
    try:
        fake_openai.queue_reply("first")
        assert text_of(await collect(workers.stream_round(ask("hi"), kwargs(fake_openai)))) == (
            "first"
        )
        await eventually(lambda: not workers.started, timeout_s=30)
        assert workers.status()["running"] == 0 and workers.pids() == []
        fake_openai.queue_reply("second")
        assert text_of(await collect(workers.stream_round(ask("hi"), kwargs(fake_openai)))) == (
            "second"
        )
        assert workers.status()["running"] == 1
    finally:
        await workers.stop()


async def test_a_worker_with_a_call_in_flight_is_not_ended_as_idle(fake_openai: Any) -> None:
    workers = ModelWorkers(1, idle_s=0.2)
    try:
        call = await held_call(workers, fake_openai)
        pid = workers.pids()
        await asyncio.sleep(1.0)  # five idle spans: the call holds the worker
        assert workers.pids() == pid
        fake_openai.release()
        assert text_of(await call).startswith("echo")
    finally:
        await workers.stop()
