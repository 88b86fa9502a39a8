"""README's local model servers, line for line: each server's hub.toml lines, read out of
README, loaded as the hub loads its config, and a web chat message answered through real
litellm by a fake of that server (animahub_kit/fakes/local_models/), built from README's own
command for it."""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from animahub_kit.fakes.local_models.server import FakeLocalServer
from animahub_kit.fakes.local_models.spec import (
    LLAMA_CPP,
    LM_STUDIO,
    OLLAMA,
    VLLM,
    ServerSpec,
    spec_from_commands,
)
from hub.api.server import create_app
from hub.app import Hub
from tests.api.test_chat_api import chat, sse_events
from tests.conftest import owner_headers, started_hub

ROOT = Path(__file__).resolve().parents[2]
SERVER = re.compile(
    r"^\*\*(?P<name>[^*]+)\*\*(?:(?!```).)*?```sh\n(?P<sh>.*?)```\s*```toml\n(?P<toml>.*?)```",
    re.DOTALL | re.MULTILINE,
)
TOML = re.compile(r"```toml\n(?P<toml>.*?)```", re.DOTALL)


def model_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### A model on your own machine")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def readme_servers() -> dict[str, tuple[str, str]]:
    """README's servers: name -> (the shell lines that start it, its hub.toml lines)."""
    found = {m["name"]: (m["sh"], m["toml"]) for m in SERVER.finditer(model_section())}
    assert found, "README's model section gives no server's command and hub.toml lines"
    return found


NAMES = ["vLLM", "LM Studio", "llama.cpp", "Ollama"]


def test_readme_gives_each_server_its_command_and_lines() -> None:
    servers = readme_servers()
    assert sorted(servers) == sorted(NAMES)
    kinds = {name: spec_from_commands([sh]).kind for name, (sh, _) in servers.items()}
    assert kinds == {"vLLM": VLLM, "LM Studio": LM_STUDIO, "llama.cpp": LLAMA_CPP, "Ollama": OLLAMA}
    for name, (sh, lines) in servers.items():
        llm = tomllib.loads(lines)["llm"]
        spec = spec_from_commands([sh])
        # the address README writes is where that command makes the server listen
        assert urlsplit(llm["api_base"]).port == spec.port, name
        # no literal key: hub.toml refuses one, and a local server needs none
        assert "api_key" not in llm, name


def local_toml(lines: str, spec: ServerSpec, fake: FakeLocalServer) -> str:
    """README's lines, aimed at the fake: only the host and port change, never the path."""
    here = lines.replace(f"localhost:{spec.port}", f"127.0.0.1:{fake.port}")
    assert here != lines, "README's api_base is not on localhost at the server's port"
    return here


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own OpenAI settings would hide a missing key or base."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "OLLAMA_API_BASE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_for(request: pytest.FixtureRequest) -> Iterator[tuple[str, FakeLocalServer]]:
    """README's lines for the server named by the test's parameter, and its running fake."""
    sh, lines = readme_servers()[request.param]
    spec = spec_from_commands([sh])
    with FakeLocalServer(spec) as fake:
        yield local_toml(lines, spec, fake), fake


@asynccontextmanager
async def hub_with(home: Path, lines: str, workers: int = 0) -> AsyncIterator[httpx.AsyncClient]:
    """A hub whose hub.toml holds `lines`, read as `animahub start` reads it."""
    (home / "hub.toml").write_text(lines, encoding="utf-8")
    hub: Hub = await started_hub(home, llm={"workers": workers})
    assert hub.settings.llm.model == tomllib.loads(lines)["llm"]["model"]  # from the file
    transport = httpx.ASGITransport(app=create_app(hub))
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers=owner_headers(home)
        ) as client:
            yield client
    finally:
        await hub.stop()


def reply_text(response: httpx.Response) -> str:
    events = sse_events(response.text)
    assert events[-1] == {"type": "done"}, events
    return "".join(e.get("text", "") for e in events)


@pytest.mark.parametrize("fake_for", NAMES, indirect=True)
async def test_readme_lines_get_the_servers_answer(
    home: Path, fake_for: tuple[str, FakeLocalServer], caplog: pytest.LogCaptureFixture
) -> None:
    lines, fake = fake_for
    fake.queue_reply("Hello from your own machine.")
    with caplog.at_level(logging.WARNING, logger="hub.app"):
        async with hub_with(home, lines) as client:
            response = await chat(client, "kai", message="Are you there?")
    assert reply_text(response) == "Hello from your own machine."
    assert not [r for r in caplog.records if r.getMessage().startswith("model setup:")]
    assert not fake.refused
    [body] = fake.requests
    route, name = tomllib.loads(lines)["llm"]["model"].split("/", 1)
    assert body["model"] == name and body["tools"]  # as README names it; tools offered
    where = "/api/chat" if route == "ollama_chat" else "/v1/chat/completions"
    assert fake.paths[-1] == f"POST {where}"


@pytest.mark.parametrize("fake_for", ["Ollama"], indirect=True)
async def test_a_tool_call_goes_round_ollamas_own_api(
    home: Path, fake_for: tuple[str, FakeLocalServer]
) -> None:
    """Ollama's tool calls carry their arguments as an object, and take the result back as
    a `tool` message: the hub's tool loop works through litellm's translation."""
    lines, fake = fake_for
    fake.queue_tool_call("current_time", {"timezone": "Asia/Tokyo"})
    fake.queue_reply("It is evening in Tokyo.")
    async with hub_with(home, lines) as client:
        response = await chat(client, "kai", message="What time is it in Tokyo?")
    assert reply_text(response) == "It is evening in Tokyo."
    first, second = fake.requests
    assert first["stream"] is True and any(
        t["function"]["name"] == "current_time" for t in first["tools"]
    )
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and "(Asia/Tokyo)" in tool_message["content"]
    assert fake.paths == ["POST /api/chat", "POST /api/chat"]


def models_doc_ollama_v1() -> str:
    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    [lines] = [m["toml"] for m in TOML.finditer(text) if "11434/v1" in m["toml"]]
    return lines


async def test_ollamas_v1_through_the_openai_route(home: Path) -> None:
    """docs/models.md's alternative: Ollama's OpenAI-compatible /v1, no key configured."""
    ollama, _ = readme_servers()["Ollama"]
    spec = spec_from_commands([ollama])
    with FakeLocalServer(spec) as fake:
        fake.queue_reply("Hello through /v1.")
        async with hub_with(home, local_toml(models_doc_ollama_v1(), spec, fake)) as client:
            response = await chat(client, "kai", message="Are you there?")
    assert reply_text(response) == "Hello through /v1."
    assert fake.paths == ["POST /v1/chat/completions"]
