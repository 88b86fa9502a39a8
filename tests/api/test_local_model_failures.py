"""What a local model server's refusals become: real litellm against the fakes of
animahub_kit/fakes/local_models/, through the hub's own call arguments (`litellm_kwargs`), so a
refusal is read as the failure it is (hub/model/failure.py), never as litellm's "Missing
credentials"; and the settings that cannot work, named at start (hub/model/routes.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from animahub_kit.fakes.local_models.server import FakeLocalServer
from animahub_kit.fakes.local_models.spec import OLLAMA, ServerSpec, spec_from_commands
from hub.model.client import LiteLLMCalls, LLMError
from hub.model.failure import FailureKind
from hub.model.routes import (
    PLACEHOLDER_KEY,
    ModelSetup,
    litellm_kwargs,
    placeholder_key,
    setup_problems,
)
from hub.settings import LLMSection
from tests.conftest import make_settings, started_hub

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "current_time",
            "description": "The time now.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "OLLAMA_API_BASE"):
        monkeypatch.delenv(name, raising=False)


def llm(home: Path, **values: Any) -> LLMSection:
    return make_settings(home, llm=values).llm


async def failure_of(section: LLMSection, model: str) -> LLMError:
    kwargs = {**litellm_kwargs(section, model), "tools": TOOLS}
    with pytest.raises(LLMError) as caught:
        async for _ in LiteLLMCalls().stream_round([{"role": "user", "content": "hi"}], kwargs):
            pass
    return caught.value


async def test_no_key_reaches_the_server_which_says_whether_it_wants_one(home: Path) -> None:
    """Before, litellm refused to send anything ("Missing credentials", read as a bad key
    whatever the server): now the server is asked, and its own 401 is the key refused."""
    spec = spec_from_commands(["vllm serve m --enable-auto-tool-choice --tool-call-parser hermes"])
    with FakeLocalServer(spec) as open_server:
        section = llm(home, model="openai/m", api_base=f"{open_server.url}/v1")
        answered = [
            p
            async for p in LiteLLMCalls().stream_round(
                [{"role": "user", "content": "hi"}], litellm_kwargs(section, "openai/m")
            )
        ]
    assert "".join(p for p in answered if isinstance(p, str)) == "echo: hi"
    locked = spec_from_commands([f"vllm serve m --api-key s3cret-{'k' * 8}"])
    with FakeLocalServer(locked) as server:
        section = llm(home, model="openai/m", api_base=f"{server.url}/v1")
        error = await failure_of(section, "openai/m")
    assert error.kind is FailureKind.KEY_REFUSED and not error.retryable
    assert "401" in str(error) and "Missing credentials" not in str(error)
    assert [r["model"] for r in server.refused] == ["m"]


@pytest.mark.parametrize(
    ("spec", "model"),
    [
        (spec_from_commands(["vllm serve m"]), "openai/m"),
        (spec_from_commands(["llama-server -m model.gguf"]), "openai/m"),
        (ServerSpec(OLLAMA, 11434, ("gemma2:latest",), tools=False), "ollama_chat/gemma2"),
    ],
    ids=["vllm-without-tool-choice", "llama-server-without-jinja", "ollama-model-without-tools"],
)
async def test_a_server_not_set_up_for_tools_is_told_as_such(
    home: Path, spec: ServerSpec, model: str
) -> None:
    """Not "the message may be too long", nor an outage retried (llama-server's is a 500)."""
    with FakeLocalServer(spec) as server:
        base = server.url if spec.kind == OLLAMA else f"{server.url}/v1"
        error = await failure_of(llm(home, model=model, api_base=base), model)
    assert error.kind is FailureKind.TOOLS_UNSUPPORTED and not error.retryable
    assert "tools" in error.kind.for_person and "--jinja" in error.kind.fix


async def test_a_wrong_address_or_name_is_a_model_unknown(home: Path) -> None:
    """vLLM and LM Studio serve nothing outside /v1; Ollama's own API nothing under it."""
    lm_studio = spec_from_commands(["lms server start", "lms load qwen"])
    with FakeLocalServer(lm_studio) as server:
        no_v1 = await failure_of(llm(home, model="openai/qwen", api_base=server.url), "openai/qwen")
        other = await failure_of(
            llm(home, model="openai/llama", api_base=f"{server.url}/v1"), "openai/llama"
        )
    ollama = spec_from_commands(["ollama pull qwen2.5"])
    with FakeLocalServer(ollama) as server:
        v1 = f"{server.url}/v1"
        native_on_v1 = await failure_of(
            llm(home, model="ollama_chat/qwen2.5", api_base=v1), "ollama_chat/qwen2.5"
        )
        paths = server.paths
    for error in (no_v1, other, native_on_v1):
        assert error.kind is FailureKind.MODEL_UNKNOWN, error
    assert "api_base" in FailureKind.MODEL_UNKNOWN.fix and "/v1" in FailureKind.MODEL_UNKNOWN.fix
    assert paths[-1] == "POST /v1/api/chat"  # litellm adds /api/chat to whatever it is given


def test_the_placeholder_is_sent_only_where_litellm_would_refuse() -> None:
    local = ModelSetup("openai/m", "http://localhost:8000/v1")
    assert placeholder_key(local, {}) == PLACEHOLDER_KEY
    assert placeholder_key(local, {"OPENAI_API_KEY": "sk-real"}) is None  # litellm sends it
    assert placeholder_key(ModelSetup("openai/m", "http://h/v1", has_key=True), {}) is None
    assert placeholder_key(ModelSetup("openai/gpt-4o"), {}) is None  # OpenAI itself: no key
    assert placeholder_key(ModelSetup("ollama_chat/m", "http://h:11434"), {}) is None
    assert placeholder_key(ModelSetup("anthropic/claude", "http://h"), {}) is None


def test_settings_that_cannot_work_are_named_with_their_fix() -> None:
    def said(model: str, base: str = "", env: dict[str, str] | None = None) -> str:
        return " | ".join(setup_problems(ModelSetup(model, base), env or {}))

    assert 'write model = "openai/qwen2.5"' in said("qwen2.5", "http://localhost:8000/v1")
    assert 'write model = "ollama_chat/llama3.1"' in said("ollama/llama3.1")
    assert 'api_base = "http://localhost:11434"' in said(
        "ollama_chat/llama3.1", "http://localhost:11434/v1/"
    )
    assert "no key is set" in said("openai/gpt-4o")
    assert said("openai/gpt-4o", env={"OPENAI_API_KEY": "sk-x"}) == ""
    for fine in (
        ("openai/qwen", "http://localhost:8000/v1"),
        ("ollama_chat/llama3.1", "http://localhost:11434"),
        ("ollama_chat/llama3.1", ""),
        ("anthropic/claude-sonnet-4-5", ""),
        ("gpt-4o", ""),
    ):
        assert said(*fine) == "", fine


async def test_the_hub_names_them_at_start(home: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hub.app"):
        hub = await started_hub(home, llm={"model": "ollama/llama3.1", "workers": 0})
        await hub.stop()
    warnings = [r.getMessage() for r in caplog.records if r.getMessage().startswith("model setup:")]
    assert len(warnings) == 1 and "ollama_chat/llama3.1" in warnings[0]


async def test_litellm_asks_the_configured_ollama_about_a_model(home: Path) -> None:
    """For a model not in its price list litellm asks Ollama (`/api/show`) first: the
    server at [llm] api_base, not litellm's default localhost:11434."""
    spec = spec_from_commands(["ollama pull qwen2.5"])
    with FakeLocalServer(spec) as fake:
        section = llm(home, model="ollama_chat/qwen2.5", api_base=fake.url)
        kwargs = litellm_kwargs(section, "ollama_chat/qwen2.5")
        said = [
            p
            async for p in LiteLLMCalls().stream_round([{"role": "user", "content": "hi"}], kwargs)
        ]
    assert "".join(p for p in said if isinstance(p, str)) == "echo: hi"
    assert fake.paths == ["POST /api/show", "POST /api/chat"]


async def test_a_stalled_ollama_is_timing_out(home: Path) -> None:
    """Ollama's fake stalls as the fake OpenAI does (`hold_next`): the call gives up after
    [llm] timeout_s, as "timing out" (retried by the runtime)."""
    spec = spec_from_commands(["ollama pull llama3.1"])
    with FakeLocalServer(spec) as fake:
        fake.hold_next()
        section = llm(home, model="ollama_chat/llama3.1", api_base=fake.url, timeout_s=0.5)
        error = await failure_of(section, "ollama_chat/llama3.1")
        [held] = fake.wait_for_requests(1)
    assert error.kind is FailureKind.TIMING_OUT and error.retryable
    assert held["model"] == "llama3.1"
