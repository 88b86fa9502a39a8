"""A failing model is visible: /api/system/health says which model is degraded or down,
why, since when and what to do, checks it again with backoff by the cheapest call, and says
`ok` once a call succeeds (hub/model/health.py). Through the real hub, litellm and the fake
OpenAI server (animahub_kit/fakes/openai_server.py)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from animahub_kit.contract.server import HubServer
from animahub_kit.fakes.openai_server import FakeOpenAI
from hub.api.server import create_app
from hub.app import Hub
from hub.cli.main import app
from hub.cli.runfile import hold_data_root
from hub.model.failure import FailureKind
from tests.api.test_chat_api import chat
from tests.conftest import add_demo_animas, make_settings, owner_headers

MODEL = "openai/fake"
KEY = "sk-proj-Zq8wLx3NvB7tR2mK9pYc4HdJ6fGs1aQe5uWi0oTn"  # a key as OpenAI's look
Health = dict[str, Any]


async def open_hub(home: Path, fake: FakeOpenAI, workers: int = 0, **llm: Any) -> Hub:
    settings = make_settings(
        home,
        hub={"default_anima": "mika"},
        llm={
            "model": MODEL,
            "api_base": f"{fake.url}/v1",
            "api_key": KEY,
            "workers": workers,
            # Checks every 0.05-0.2 s: the test waits for them, not for minutes.
            "health_check_min_s": 0.05,
            "health_check_max_s": 0.2,
            **llm,
        },
        runtime={"max_turn_attempts": 1},
        scheduler={"enabled": False},
        memory={"enabled": False},
    )
    hub = Hub(settings)
    await hub.start()
    add_demo_animas(hub)
    return hub


async def connected(hub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://localhost", headers=owner_headers(hub.settings.home)
    ) as http:
        yield http


@pytest.fixture(params=[0, 1], ids=["in-process", "model-worker"])
async def watched(
    home: Path, fake_openai: FakeOpenAI, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[httpx.AsyncClient, Hub]]:
    hub = await open_hub(home, fake_openai, workers=request.param)
    try:
        async for http in connected(hub):
            yield http, hub
    finally:
        await hub.stop()


@pytest.fixture
async def in_process(
    home: Path, fake_openai: FakeOpenAI
) -> AsyncIterator[tuple[httpx.AsyncClient, Hub]]:
    hub = await open_hub(home, fake_openai)
    try:
        async for http in connected(hub):
            yield http, hub
    finally:
        await hub.stop()


async def health_until(
    client: httpx.AsyncClient, reached: Callable[[Health], bool], timeout_s: float = 30.0
) -> Health:
    """Health, read until `reached` says so (or the test fails after `timeout_s`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        health: Health = (await client.get("/api/system/health")).json()
        if reached(health):
            return health
        if loop.time() > deadline:
            raise AssertionError(f"health never got there: {health['model']}")
        await asyncio.sleep(0.05)


def model_of(health: Health, name: str = MODEL) -> dict[str, Any]:
    return dict(health["model"]["models"][name])


def state_is(state: str, name: str = MODEL) -> Callable[[Health], bool]:
    return lambda health: model_of(health, name)["state"] == state


def when(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


def send(client: httpx.AsyncClient, text: str, anima: str = "aria") -> asyncio.Task[Any]:
    """A message to `anima`, its reply not waited for: what the model says is health's."""
    return asyncio.create_task(chat(client, anima, message=text))


async def finish(task: asyncio.Task[Any]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_model_server_down_then_back(
    watched: tuple[httpx.AsyncClient, Hub], fake_openai: FakeOpenAI
) -> None:
    client, hub = watched
    health = (await client.get("/api/system/health")).json()
    assert health["status"] == "ok"
    assert model_of(health)["state"] == "unchecked"  # no call yet: not claimed to work
    fake_openai.go_down()
    sent_at = hub.clock.now()
    turn = send(client, "are you there?")
    try:
        health = await health_until(client, state_is("down"))
    finally:
        await finish(turn)
    seen_at = hub.clock.now()
    model = model_of(health)
    assert health["status"] == "degraded" and f"model {MODEL}" in health["problems"]
    assert health["model"]["state"] == "down"
    assert model["reason"] == "unreachable" and model["fix"] == FailureKind.UNREACHABLE.fix
    assert model["detail"] and model["failures"] >= 2  # the turn's failure, then a check's
    assert sent_at <= when(model["since"]) <= seen_at  # since the first failed call
    assert when(model["since"]) <= when(model["last_failure"]) <= seen_at
    assert model["next_check"] is not None and model["last_success"] is None

    asked = len(fake_openai.requests)
    fake_openai.come_back()
    health = await health_until(client, state_is("ok"))
    model = model_of(health)
    # Found by the check, without any new turn: the list of models, not a completion.
    assert len(fake_openai.requests) == asked and fake_openai.model_lists >= 1
    assert health["status"] == "ok" and health["problems"] == []
    assert model["reason"] == "" and model["fix"] == "" and model["since"] is None
    assert model["last_success"] is not None and model["next_check"] is None


async def test_a_refused_key_is_down_with_its_fix_and_never_shown(
    watched: tuple[httpx.AsyncClient, Hub], fake_openai: FakeOpenAI
) -> None:
    client, _hub = watched
    fake_openai.refuse(401)  # echoes the key it was sent, masked in part
    turn = send(client, "hello?")
    try:
        health = await health_until(client, state_is("down"))
    finally:
        await finish(turn)
    model = model_of(health)
    assert model["reason"] == "key refused" and model["fix"] == FailureKind.KEY_REFUSED.fix
    assert "[llm] api_key" in model["fix"]
    assert "401" in model["detail"] and "Incorrect API key" in model["detail"]
    assert_no_key_in(json.dumps(health))
    assert_no_key_in(json.dumps((await client.get("/api/dashboard/animas")).json()))
    # Checked again by the call that failed, as small as it gets, until the key works.
    await health_until(client, lambda h: model_of(h)["failures"] >= 3)
    check = fake_openai.requests[-1]
    assert check["max_tokens"] == 1 and "tools" not in check and not check.get("stream")
    fake_openai.reset()  # the key is fixed at the provider
    health = await health_until(client, state_is("ok"))
    assert health["status"] == "ok"


def assert_no_key_in(text: str) -> None:
    """Neither the key nor any 8 characters of it, nor anything shaped like a key."""
    assert not [KEY[i : i + 8] for i in range(len(KEY) - 7) if KEY[i : i + 8] in text]
    assert not re.search(r"sk-[\w*-]{4,}", text), text
    assert "****" not in text, text


async def test_an_unknown_model_is_down_with_its_fix(
    in_process: tuple[httpx.AsyncClient, Hub], fake_openai: FakeOpenAI
) -> None:
    client, _hub = in_process
    fake_openai.refuse(404)
    turn = send(client, "hello?")
    try:
        health = await health_until(client, state_is("down"))
    finally:
        await finish(turn)
    model = model_of(health)
    assert model["reason"] == "model unknown" and model["fix"] == FailureKind.MODEL_UNKNOWN.fix
    assert "does not exist" in model["detail"]
    # The dashboard: the owner sees the provider's error, a person why and since when only.
    owners = (await client.get("/api/dashboard/animas")).json()["model"]
    assert owners["models"][MODEL]["detail"] == model["detail"]
    made = await client.post("/api/tokens", json={"person": "dana"})
    assert made.status_code == 201, made.text
    dana = {"Authorization": f"Bearer {made.json()['token']}"}
    persons = (await client.get("/api/dashboard/animas", headers=dana)).json()["model"]
    assert persons["state"] == "down" and persons["models"][MODEL]["reason"] == "model unknown"
    assert persons["models"][MODEL]["detail"] == ""


async def test_no_key_at_all_is_key_refused_and_nothing_is_sent(
    home: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenAI's own route with no key anywhere (a local server at `api_base` gets a
    placeholder, hub/model/routes.py): litellm (the openai SDK) refuses to send a request
    without one, and the checks cannot mend that either."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    hub = await open_hub(home, fake_openai, api_key=None, api_base="")
    try:
        async for client in connected(hub):
            turn = send(client, "hello?")
            try:
                await health_until(client, lambda h: model_of(h)["failures"] >= 3)
            finally:
                await finish(turn)
            model = model_of((await client.get("/api/system/health")).json())
    finally:
        await hub.stop()
    assert model["state"] == "down" and model["reason"] == "key refused"
    assert "[llm] api_key" in model["fix"] and "OPENAI_API_KEY" in model["fix"]


async def test_rate_limited_is_degraded_not_down(
    in_process: tuple[httpx.AsyncClient, Hub], fake_openai: FakeOpenAI
) -> None:
    client, _hub = in_process
    fake_openai.refuse(429)
    turn = send(client, "hello?")
    try:
        # However many times in a row: the model works, its provider asks to slow down.
        health = await health_until(client, lambda h: model_of(h)["failures"] >= 3)
    finally:
        await finish(turn)
    model = model_of(health)
    assert model["state"] == "degraded" and model["reason"] == "rate limited"
    assert model["fix"] == FailureKind.RATE_LIMITED.fix
    assert health["status"] == "degraded" and f"model {MODEL}" in health["problems"]
    fake_openai.reset()
    await health_until(client, state_is("ok"))


async def test_a_stalled_model_is_timing_out_then_ok(home: Path, fake_openai: FakeOpenAI) -> None:
    hub = await open_hub(home, fake_openai, timeout_s=1)
    try:
        async for client in connected(hub):
            for _ in range(3):  # the turn and the first two checks get no answer in time
                fake_openai.hold_next()
            turn = send(client, "hello?")
            try:
                health = await health_until(client, lambda h: model_of(h)["reason"] != "")
            finally:
                await finish(turn)
            model = model_of(health)
            assert model["reason"] == "timing out" and "timed out" in model["detail"]
            assert model["fix"] == FailureKind.TIMING_OUT.fix
            await health_until(client, state_is("ok"))  # the third check is answered
            check = fake_openai.requests[-1]
            assert check["max_tokens"] == 1 and "tools" not in check
    finally:
        fake_openai.release()
        await hub.stop()


async def test_each_animas_model_is_its_own(
    in_process: tuple[httpx.AsyncClient, Hub], fake_openai: FakeOpenAI
) -> None:
    client, hub = in_process
    toml = hub.settings.home / "animas" / "kai" / "anima.toml"
    toml.write_text(toml.read_text().replace('model = ""', 'model = "openai/kai"'))
    hub.animas.load()
    health = (await client.get("/api/system/health")).json()
    assert set(health["model"]["models"]) == {MODEL, "openai/kai"}
    fake_openai.refuse(404, model="kai")
    turn = send(client, "hello?", anima="kai")
    try:
        health = await health_until(client, state_is("down", "openai/kai"))
    finally:
        await finish(turn)
    assert model_of(health, "openai/kai")["reason"] == "model unknown"
    assert health["problems"] == ["model openai/kai"]
    answered = await chat(client, "aria", message="and you?")  # the default model works
    assert "echo: " in answered.text
    health = (await client.get("/api/system/health")).json()
    assert model_of(health)["state"] == "ok" and health["model"]["state"] == "down"


async def test_no_model_is_offline_and_never_checked(home: Path, fake_openai: FakeOpenAI) -> None:
    hub = await open_hub(home, fake_openai, model="")
    try:
        async for client in connected(hub):
            response = await chat(client, "aria", message="hello")
            assert response.status_code == 200
            health = (await client.get("/api/system/health")).json()
            assert health["model"] == {"state": "offline", "models": {}}
            assert health["status"] == "ok" and health["llm"] == "offline"
            assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("model check")]
    finally:
        await hub.stop()
    assert fake_openai.requests == [] and fake_openai.model_lists == 0


async def test_checks_stop_with_the_hub(home: Path, fake_openai: FakeOpenAI) -> None:
    hub = await open_hub(home, fake_openai)
    fake_openai.go_down()
    try:
        async for client in connected(hub):
            turn = send(client, "hello?")
            try:
                await health_until(client, state_is("down"))
            finally:
                await finish(turn)
            assert [t for t in asyncio.all_tasks() if t.get_name().startswith("model check")]
    finally:
        await hub.stop()
    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("model check")]


async def test_status_shows_each_models_state_reason_since_and_fix(
    home: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = await open_hub(home, fake_openai)
    server = HubServer(create_app(hub))
    await server.start()
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "400")  # one table row a line
    try:
        fake_openai.refuse(401)
        async for client in connected(hub):
            turn = send(client, "hello?")
            try:
                await health_until(client, state_is("down"))
            finally:
                await finish(turn)
        with hold_data_root(home, server.url):
            result = await asyncio.to_thread(CliRunner().invoke, app, ["status"])
    finally:
        await server.stop()
        await hub.stop()
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.replace("│", " ").split())  # the table's cells, unwrapped
    assert "status degraded (model openai/fake)" in out, out
    line = re.search(r"openai/fake down since \d\d:\d\d:\d\d UTC: key refused \(.*", out)
    assert line is not None, out
    assert f"; fix: {FailureKind.KEY_REFUSED.fix} (next check " in line.group(0)
    assert "[REDACTED:key-echo]" in line.group(0)  # the part of the key the provider echoed
    assert_no_key_in(result.output)
