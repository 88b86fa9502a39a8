"""Tests of the fake OpenAI server (animahub_kit/fakes/openai_server.py), driven through litellm."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import asyncio
import json
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import litellm
import pytest
from litellm.exceptions import RateLimitError  # what litellm.RateLimitError names

from animahub_kit.fakes.openai_server import FakeOpenAI

REPO_ROOT = Path(__file__).resolve().parents[2]
USER_HI = [{"role": "user", "content": "hi there"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def _fake_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("FakeOpenAI-")]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
    assert not server.running
    assert _fake_threads() == []


async def _complete(fake: FakeOpenAI, **kwargs: Any) -> Any:
    params: dict[str, Any] = {"messages": USER_HI, "num_retries": 0, "max_retries": 0}
    params.update(kwargs)
    return await litellm.acompletion(
        model="openai/fake", api_base=f"{fake.url}/v1", api_key="x", **params
    )


async def _stream_chunks(fake: FakeOpenAI, **kwargs: Any) -> list[Any]:
    stream = await _complete(fake, stream=True, **kwargs)
    return [chunk async for chunk in stream]


async def _eventually(check: Callable[[], Awaitable[bool]], attempts: int = 500) -> None:
    """Poll ``check`` every 20 ms (10 s in all) until it holds."""
    for _ in range(attempts):
        if await check():
            return
        await asyncio.sleep(0.02)
    pytest.fail("condition not met in time")


def _held(fake: FakeOpenAI, count: int = 1) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return fake.held_count == count

    return check


# --------------------------------------------------------------------------- in-process


async def test_non_streaming_returns_queued_text(fake: FakeOpenAI) -> None:
    fake.queue_reply("Hello from the fake.")

    response = await _complete(fake)

    assert response.choices[0].message.content == "Hello from the fake."
    assert response.choices[0].finish_reason == "stop"
    assert response.usage.total_tokens > 0
    assert fake.requests[0]["messages"] == USER_HI
    assert fake.requests[0]["model"] == "fake"


async def test_replies_are_first_in_first_out_then_echo(fake: FakeOpenAI) -> None:
    fake.queue_reply("one")
    fake.queue_reply("two")

    contents = [(await _complete(fake)).choices[0].message.content for _ in range(3)]

    assert contents == ["one", "two", "echo: hi there"]


async def test_streaming_returns_queued_text_in_several_deltas(fake: FakeOpenAI) -> None:
    text = "A streamed answer, long enough to be split."
    fake.queue_reply(text)

    chunks = await _stream_chunks(fake)

    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert len(pieces) > 1
    assert "".join(pieces) == text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert fake.requests[0]["stream"] is True


async def test_tool_call_round_trips(fake: FakeOpenAI) -> None:
    fake.queue_tool_call("get_weather", {"city": "Paris"})

    response = await _complete(fake, tools=[WEATHER_TOOL])

    call = response.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert call.id.startswith("call_")
    assert response.choices[0].finish_reason == "tool_calls"
    assert fake.requests[0]["tools"][0]["function"]["name"] == "get_weather"


async def test_streamed_tool_call_round_trips(fake: FakeOpenAI) -> None:
    fake.queue_tool_call("get_weather", {"city": "Paris"}, call_id="call_fixed")

    chunks = await _stream_chunks(fake, tools=[WEATHER_TOOL])

    rebuilt: Any = litellm.stream_chunk_builder(chunks)
    call = rebuilt.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name) == ("call_fixed", "get_weather")
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_rate_limit_surfaces_as_rate_limit_error(fake: FakeOpenAI) -> None:
    fake.fail_next(status=429, retry_after=2)

    with pytest.raises(RateLimitError):
        await _complete(fake)

    assert len(fake.requests) == 1, "litellm retried despite num_retries=0/max_retries=0"
    assert (await _complete(fake)).choices[0].message.content == "echo: hi there"


async def test_hold_next_blocks_until_release(fake: FakeOpenAI) -> None:
    fake.queue_reply("released")
    fake.hold_next()

    task = asyncio.create_task(_complete(fake))
    await _eventually(_held(fake))
    await asyncio.sleep(0.2)
    assert not task.done()

    fake.release()
    response = await asyncio.wait_for(task, 10)
    assert response.choices[0].message.content == "released"


# --------------------------------------------------------------------------- raw HTTP


async def test_error_answer_has_openai_shape_and_retry_after(fake: FakeOpenAI) -> None:
    fake.fail_next(status=429, retry_after=2)

    async with httpx.AsyncClient(base_url=fake.url) as client:
        response = await client.post("/v1/chat/completions", json={"messages": USER_HI})

    assert response.status_code == 429
    assert response.headers["retry-after"] == "2"
    error = response.json()["error"]
    assert error["code"] == "rate_limit_exceeded"
    assert set(error) == {"message", "type", "param", "code"}


async def test_stream_wire_format(fake: FakeOpenAI) -> None:
    fake.queue_reply("wire format")
    body = {"model": "m", "messages": USER_HI, "stream": True}
    body["stream_options"] = {"include_usage": True}

    async with httpx.AsyncClient(base_url=fake.url) as client:
        response = await client.post("/v1/chat/completions", json=body)

    assert response.headers["content-type"].startswith("text/event-stream")
    lines = [line for line in response.text.split("\n") if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] > 0


async def test_stop_answers_a_held_request_with_503() -> None:
    fake = FakeOpenAI().start()
    fake.hold_next()
    async with httpx.AsyncClient(base_url=fake.url, timeout=10) as client:
        task = asyncio.create_task(client.post("/v1/chat/completions", json={"messages": USER_HI}))
        await _eventually(_held(fake))

        await asyncio.to_thread(fake.stop)

        assert (await task).status_code == 503
    assert not fake.running
    assert _fake_threads() == []


# --------------------------------------------------------------------------- standalone process


@pytest.fixture
async def standalone_url() -> AsyncIterator[str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "animahub_kit.fakes.openai_server",
        "--port",
        "0",
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 20)).decode().strip()
        assert line.startswith("READY http://127.0.0.1:"), line
        yield line.removeprefix("READY ")
        process.terminate()
        assert await asyncio.wait_for(process.wait(), 10) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_standalone_process_control_endpoints(standalone_url: str) -> None:
    async with httpx.AsyncClient(base_url=standalone_url, timeout=10) as client:
        await client.post("/_control/queue_reply", json={"text": "from another process"})
        await client.post("/_control/hold_next")

        task = asyncio.create_task(
            client.post("/v1/chat/completions", json={"model": "m", "messages": USER_HI})
        )

        async def request_arrived() -> bool:
            return bool((await client.get("/_control/requests")).json())

        await _eventually(request_arrived)
        await asyncio.sleep(0.2)
        assert not task.done()

        await client.post("/_control/release")
        response = await asyncio.wait_for(task, 10)
        requests = (await client.get("/_control/requests")).json()

    assert response.json()["choices"][0]["message"]["content"] == "from another process"
    assert requests == [{"model": "m", "messages": USER_HI}]


async def test_standalone_process_serves_litellm(standalone_url: str) -> None:
    async with httpx.AsyncClient(base_url=standalone_url) as client:
        await client.post("/_control/queue_reply", json={"text": "streamed across processes"})

    stream = await litellm.acompletion(
        model="openai/fake",
        api_base=f"{standalone_url}/v1",
        api_key="x",
        messages=USER_HI,
        stream=True,
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream])

    assert text == "streamed across processes"
