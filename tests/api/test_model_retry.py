"""A failing model, through the real hub, real litellm and the fake OpenAI server (issue 47).

Transient failures are retried in the conversation's lane and answered once the model works,
the person told once that the answer is delayed; a failure no retry mends is explained in
one sentence; a stalled model is cut off by the hub's deadlines and retried; past the bound
the message is closed `failed` with one last notice; a restart mid-retry answers it once.
Deadlines and backoffs are configured short: the tests wait for events, never for time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import col, select

from hub.api.server import create_app
from hub.app import Hub
from hub.cli.status import _failed_turns_line
from hub.model.client import LLMError
from hub.model.failure import FailureKind
from hub.model.routes import litellm_kwargs
from hub.settings import Settings
from hub.store.models import DeliveryRow, InboxItem
from tests.api.test_chat_api import chat, sse_events
from tests.conftest import add_demo_animas, make_settings, owner_headers

# Backoffs of tens of milliseconds. The deadlines are the defaults, but where a stall is
# the test: then a first token within 5 s and a call within 8 s (a call on this loaded
# machine may take a second or two to reach the fake, in a model worker).
FAST = {"model_retry_base_s": 0.05, "model_retry_max_s": 0.2, "model_retry_for_s": 60}
SHORT = {"first_token_timeout_s": 5, "timeout_s": 8, "waiting_notice_s": 0.2}


def retry_settings(
    home: Path,
    fake: Any,
    database_url: str,
    workers: int = 0,
    deadlines: dict[str, float] | None = None,
    **runtime: Any,
) -> Settings:
    return make_settings(
        home,
        hub={"default_anima": "mika"},
        llm={
            "model": "openai/fake",
            "api_base": f"{fake.url}/v1",
            "api_key": "x",
            "workers": workers,
            **(deadlines or {}),
        },
        runtime={**FAST, **runtime},
        scheduler={"enabled": False},
        storage={"database_url": database_url},
    )


@pytest.fixture(params=[0, 1], ids=["in-process", "model-worker"])
def workers(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def deadlines() -> dict[str, float]:
    return {}


@pytest.fixture
async def started(
    home: Path, fake_openai: Any, database_url: str, workers: int, deadlines: dict[str, float]
) -> AsyncIterator[tuple[httpx.AsyncClient, Hub]]:
    hub = Hub(retry_settings(home, fake_openai, database_url, workers, deadlines))
    await hub.start()
    add_demo_animas(hub)
    await warmed(hub, fake_openai)
    transport = httpx.ASGITransport(app=create_app(hub))
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers=owner_headers(home)
        ) as http:
            yield http, hub
    finally:
        await hub.stop()


async def warmed(hub: Hub, fake: Any) -> Hub:
    """The hub's model client has made one call (litellm's first call is slow to set up on
    a loaded machine, and the deadlines here are short); the fake forgets it."""
    kwargs = litellm_kwargs(hub.settings.llm, hub.settings.llm.model)
    for _ in range(5):  # the first call may pass the short deadline setting itself up
        try:
            async for _piece in hub.model.stream_round([{"role": "user", "content": "hi"}], kwargs):
                pass
        except LLMError as exc:
            assert exc.kind is FailureKind.TIMING_OUT, exc
            continue
        break
    fake.reset()
    return hub


async def eventually(check: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    """Wait for `check` to hold (the timeout guards against a hang; it measures nothing)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        found = check()
        if found:
            return found
        if loop.time() > deadline:
            raise AssertionError(f"not so within {timeout_s} s (last: {found!r})")
        await asyncio.sleep(0.02)


def rows(hub: Hub) -> list[InboxItem]:
    with hub.db.session() as session:
        return list(session.exec(select(InboxItem).order_by(col(InboxItem.received_at))).all())


def deliveries(hub: Hub) -> list[DeliveryRow]:
    with hub.db.session() as session:
        found = session.exec(select(DeliveryRow).order_by(col(DeliveryRow.created_at))).all()
        return list(found)


def of_kind(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def text_after_last_delay(events: list[dict[str, Any]]) -> str:
    """What the web chat shows in the reply's bubble: a `delayed` event drops what came before."""
    shown = ""
    for event in events:
        if event["type"] == "delayed":
            shown = ""
        elif event["type"] == "text":
            shown += event["text"]
    return shown


async def test_transient_failures_are_retried_in_order_and_told_once(
    started: tuple[httpx.AsyncClient, Hub], fake_openai: Any
) -> None:
    client, hub = started
    for _ in range(3):  # a provider failing three times (500), then answering
        fake_openai.fail_next(status=500, retry_after=None)
    fake_openai.queue_reply("answer one")  # replies go to requests in the order they come
    fake_openai.queue_reply("answer two")
    first = asyncio.create_task(chat(client, "aria", message="first question"))
    await eventually(lambda: any(r.attempts for r in rows(hub)))  # it failed, and waits
    second = asyncio.create_task(chat(client, "aria", message="second question"))
    first_events = sse_events((await first).text)
    second_events = sse_events((await second).text)

    # one plain notice, the real reply after it, the conversation's order kept
    [delayed] = [e for e in of_kind(first_events, "delayed") if e["message"]]
    assert FailureKind.SERVER_ERROR.for_person in delayed["message"]
    assert "500" not in delayed["message"] and "Fake OpenAI" not in delayed["message"]
    assert first_events[-1] == {"type": "done"}
    assert text_after_last_delay(first_events) == "answer one"
    assert second_events[-1] == {"type": "done"} and not of_kind(second_events, "delayed")
    assert text_after_last_delay(second_events) == "answer two"
    asked = [r["messages"][-1]["content"] for r in fake_openai.requests]
    assert len(asked) == 5  # 3 failures and the answer of the first, then the second
    assert ["first question" in a for a in asked] == [True] * 4 + [False]
    sent = deliveries(hub)
    notices = [d for d in sent if d.kind == "notice"]
    assert [d.idempotency_key for d in notices] == [f"delayed:{rows(hub)[0].id}"]
    assert notices[0].text == delayed["message"]
    replies = [d.text for d in sent if d.kind == "reply"]
    assert replies == ["answer one", "answer two"]
    assert [(r.status, r.attempts) for r in rows(hub)] == [("done", 3), ("done", 0)]


async def test_a_refused_key_is_explained_once_and_not_retried(
    started: tuple[httpx.AsyncClient, Hub], fake_openai: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client, hub = started
    fake_openai.fail_next(status=401, message="Incorrect API key provided: sk-abc***xyz")
    with caplog.at_level(logging.ERROR, logger="hub.turns.runtime"):
        events = sse_events((await chat(client, "aria", message="hello?")).text)
    kind = FailureKind.KEY_REFUSED
    assert events[-1] == {
        "type": "error",
        "message": f"Sorry, I cannot answer your message. {kind.for_person}",
    }
    assert len(fake_openai.requests) == 1  # not retried, by the hub nor by the SDK
    [row] = rows(hub)
    assert row.status == "failed" and row.attempts == 0
    assert row.error is not None and row.error.startswith("key refused: ")
    assert kind.fix in row.error  # the operator's fix, where the failed turns are listed
    assert "Incorrect API key" in row.error
    [notice] = deliveries(hub)
    assert notice.kind == "notice" and notice.text == events[-1]["message"]
    [line] = [r.getMessage() for r in caplog.records if "not answered" in r.getMessage()]
    assert kind.fix in line
    failed = (await client.get("/api/system/health")).json()["failed_turns"]
    assert failed["count"] == 1 and failed["latest"]["error"] == row.error
    assert kind.fix in _failed_turns_line(failed)  # `animahub status`'s "failed turns" row


@pytest.mark.parametrize("deadlines", [SHORT])
@pytest.mark.parametrize("after_chars", [0, 8], ids=["no-first-token", "mid-stream"])
async def test_a_stalled_model_is_cut_off_and_retried(
    started: tuple[httpx.AsyncClient, Hub], fake_openai: Any, after_chars: int
) -> None:
    client, hub = started
    fake_openai.stall_next(after_chars=after_chars)
    fake_openai.queue_reply("Yes, I am here.")  # the stalled stream's text
    fake_openai.queue_reply("Yes, I am here.")  # the retry's
    events = sse_events((await chat(client, "aria", message="are you there?")).text)
    # the web chat was told it still waits, then that the answer is delayed, then the reply
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "done" and kinds.count("delayed") == 1
    if after_chars == 0:
        assert kinds.index("waiting") < kinds.index("delayed")
    else:
        assert kinds.index("text") < kinds.index("delayed")  # some text, then the stall
    [delayed] = of_kind(events, "delayed")
    assert FailureKind.TIMING_OUT.for_person in delayed["message"]
    assert text_after_last_delay(events) == "Yes, I am here."
    [row] = rows(hub)
    assert (row.status, row.attempts) == ("done", 1)
    assert len(fake_openai.requests) == 2
    # the stalled call was really cancelled (in the model worker too): its client left
    await eventually(lambda: fake_openai.stalls.cut_off == 1)
    assert sorted(d.kind for d in deliveries(hub)) == ["notice", "reply"]


async def test_past_the_bound_one_last_notice_and_the_row_failed(
    home: Path, fake_openai: Any, database_url: str
) -> None:
    settings = retry_settings(home, fake_openai, database_url, model_retry_for_s=0.5)
    hub = Hub(settings)
    await hub.start()
    add_demo_animas(hub)
    await warmed(hub, fake_openai)
    for _ in range(200):
        fake_openai.fail_next(status=503, retry_after=None)
    transport = httpx.ASGITransport(app=create_app(hub))
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers=owner_headers(home)
        ) as client:
            events = sse_events((await chat(client, "aria", message="anyone?")).text)
        kind = FailureKind.SERVER_ERROR
        assert len([e for e in of_kind(events, "delayed") if e["message"]]) == 1
        assert events[-1]["type"] == "error"
        final = events[-1]["message"]
        assert final.startswith(f"Sorry, I could not answer your message. {kind.for_person}")
        assert "send it again later" in final and "503" not in final
        [row] = rows(hub)
        assert row.status == "failed" and row.attempts >= 1
        assert row.error is not None and "gave up after" in row.error and kind.fix in row.error
        sent = deliveries(hub)
        assert [d.idempotency_key for d in sent] == [f"delayed:{row.id}", f"notice:{row.id}"]
        assert sent[1].text == final
    finally:
        await hub.stop()


async def test_a_restart_mid_retry_answers_once(
    home: Path, fake_openai: Any, database_url: str
) -> None:
    settings = retry_settings(home, fake_openai, database_url)
    first = Hub(settings)
    await first.start()
    add_demo_animas(first)
    await warmed(first, fake_openai)
    for _ in range(200):
        fake_openai.fail_next(status=500, retry_after=None)
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(first)),
        base_url="http://localhost",
        headers=owner_headers(home),
    )
    asked = asyncio.create_task(chat(client, "aria", message="still there?"))
    await eventually(lambda: (r := rows(first)) and r[0].attempts >= 2)
    await first.stop()  # mid-retry: the row is open, with its attempts and its spell's start
    asked.cancel()
    await asyncio.gather(asked, return_exceptions=True)
    await client.aclose()
    [row] = rows(first)
    assert row.status in ("received", "processing") and row.failing_since is not None

    fake_openai.reset()  # the model works again
    fake_openai.queue_reply("Still here.")
    again = Hub(settings)
    await again.start()
    try:
        await eventually(lambda: rows(again)[0].status == "done")
        await eventually(lambda: all(d.status == "sent" for d in deliveries(again)))
        sent = deliveries(again)
        assert [d.kind for d in sent] == ["notice", "reply"]  # told once, answered once
        assert sent[1].text == "Still here."
    finally:
        await again.stop()
