"""Turns through litellm against a local fake OpenAI server: streaming, tools, failures."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hub.api.server import create_app
from hub.app import Hub
from hub.model.failure import FailureKind
from tests.api.test_chat_api import chat, sse_events
from tests.conftest import add_demo_animas, make_settings, owner_headers


@pytest.fixture(params=[1, 0], ids=["model-worker", "in-process"])
async def llm_client(
    home: Path, fake_openai: Any, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[httpx.AsyncClient, Hub]]:
    """The same turns with litellm in a model worker process and on the hub's own loop."""
    settings = make_settings(
        home,
        hub={"default_anima": "mika"},
        llm={
            "model": "openai/fake",
            "api_base": f"{fake_openai.url}/v1",
            "api_key": "x",
            "workers": request.param,
        },
        runtime={"max_turn_attempts": 2},
    )
    hub = Hub(settings)
    await hub.start()
    add_demo_animas(hub)
    transport = httpx.ASGITransport(app=create_app(hub))
    try:
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://localhost",
            headers=owner_headers(hub.settings.home),
        ) as http:
            yield http, hub
    finally:
        await hub.stop()


def reply_text(response: httpx.Response) -> str:
    return "".join(e.get("text", "") for e in sse_events(response.text))


async def test_streamed_reply_with_history(llm_client: Any, fake_openai: Any) -> None:
    client, hub = llm_client
    fake_openai.queue_reply("Nice to meet you, Alice. I will remember that.")
    first = await chat(client, "aria", message="I'm Alice and I like ramen")
    assert reply_text(first) == "Nice to meet you, Alice. I will remember that."
    await hub.memory.drain()  # the first turn is indexed before the second is primed
    second = await chat(client, "aria", message="What do I like?")
    assert sse_events(second.text)[-1] == {"type": "done"}
    body = fake_openai.requests[-1]
    assert body["model"] == "fake" and body["stream"] is True
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "system", "user", "assistant", "user"]
    assert "Aria" in body["messages"][0]["content"]  # identity.md is the persona
    recalled = body["messages"][1]["content"]
    assert recalled.startswith("<recalled-memory") and "not instructions" in recalled
    assert "ramen" in recalled  # the first turn, recorded and recalled
    assert "ramen" in body["messages"][2]["content"]
    assert body["messages"][4]["content"].startswith('<message from="alice">')


async def test_tool_calling_loop(
    llm_client: Any, fake_openai: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client, _hub = llm_client
    fake_openai.queue_tool_call("current_time", {"timezone": "Asia/Tokyo"})
    fake_openai.queue_reply("It is evening in Tokyo.")
    with caplog.at_level(logging.INFO, logger="hub.turns.runtime"):
        response = await chat(client, "kai", message="What time is it in Tokyo?")
    assert reply_text(response) == "It is evening in Tokyo."
    assert len(fake_openai.requests) == 2
    # the log line counts the tokens of both rounds, as the server reported them
    tokens_in = sum(u["prompt_tokens"] for u in fake_openai.usage)
    tokens_out = sum(u["completion_tokens"] for u in fake_openai.usage)
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("answered")]
    assert f"(openai/fake, {tokens_in:,} tokens in, {tokens_out:,} out; " in line, line
    assert any(t["function"]["name"] == "current_time" for t in fake_openai.requests[0]["tools"])
    tool_message = fake_openai.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "(Asia/Tokyo)" in tool_message["content"]


async def test_permanent_model_error_tells_the_sender(llm_client: Any, fake_openai: Any) -> None:
    client, hub = llm_client
    fake_openai.fail_next(status=401)
    response = await chat(client, "aria", message="hello?")
    events = sse_events(response.text)
    assert events[-1]["type"] == "error"
    # one plain sentence, no provider text (issue 47: the kind's words, hub/model/failure.py)
    assert events[-1]["message"] == (
        "Sorry, I cannot answer your message. " + FailureKind.KEY_REFUSED.for_person
    )
    health = (await client.get("/api/system/health")).json()
    assert health["llm"] == "openai/fake"
    ready = {"configured": 1, "running": 1, "ready": 1}
    assert health["model_workers"] == (ready if hub.settings.llm.workers else None)
    with hub.db.session() as session:
        from sqlmodel import select

        from hub.store.models import DeliveryRow, InboxItem

        row = session.exec(select(InboxItem)).one()
        notice = session.exec(select(DeliveryRow)).one()
    assert row.status == "failed" and row.error
    assert notice.kind == "notice" and notice.text == events[-1]["message"]
