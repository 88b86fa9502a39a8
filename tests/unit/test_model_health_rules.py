"""The rules of a model's state (hub/model/health.py) and of what its errors may show
(hub/model/failure.py): pure functions, tested on their own; the hub's use of them is
tests/api/test_model_health.py."""

from __future__ import annotations

import pytest

from hub.model.client import LLMError
from hub.model.failure import KEY_ECHO, FailureKind, without_key_shapes
from hub.model.health import ModelState, configured_models, state_after, without_key_echoes
from hub.model.probe import list_url

TRANSIENT = (
    FailureKind.UNREACHABLE,
    FailureKind.TIMING_OUT,
    FailureKind.SERVER_ERROR,
    FailureKind.INTERNAL,
)


@pytest.mark.parametrize("kind", TRANSIENT)
def test_a_transient_failure_is_degraded_once_and_down_when_confirmed(kind: FailureKind) -> None:
    assert state_after(kind, 1) is ModelState.DEGRADED
    assert state_after(kind, 2) is ModelState.DOWN
    assert state_after(kind, 9) is ModelState.DOWN


@pytest.mark.parametrize("kind", [FailureKind.KEY_REFUSED, FailureKind.MODEL_UNKNOWN])
def test_what_no_retry_mends_is_down_at_once(kind: FailureKind) -> None:
    assert state_after(kind, 1) is ModelState.DOWN


@pytest.mark.parametrize(
    "kind", [FailureKind.RATE_LIMITED, FailureKind.BAD_REQUEST, FailureKind.CONTENT_REFUSED]
)
def test_a_model_that_answers_is_never_down(kind: FailureKind) -> None:
    assert state_after(kind, 1) is ModelState.DEGRADED
    assert state_after(kind, 50) is ModelState.DEGRADED


@pytest.mark.parametrize(
    "echo",
    [
        "Incorrect API key provided: sk-proj-************************************0oTn.",
        "Incorrect API key provided: sk-abcd****************************wxyz",
        "invalid x-api-key: sk-ant-api03-Zq8w…0oTn",
        "API key not valid: AIzaSyD3kq-0b8cR1-xyz",
        "token gsk_12ab************************ rejected",
        "Authentication failed for key ****************0oTn",
        "bad token hf_AbCdEfGh12345",
    ],
)
def test_a_key_echoed_in_part_is_cut(echo: str) -> None:
    # Cut by this rule, and from every model error (the redactor may have caught it first).
    for shown in (without_key_shapes(echo), str(LLMError(echo, kind=FailureKind.KEY_REFUSED))):
        assert "[REDACTED:" in shown and "***" not in shown
        for part in ("0oTn", "wxyz", "xyz", "12ab", "12345"):
            if part in echo:
                assert part not in shown, shown


def test_words_that_only_resemble_a_key_stay() -> None:
    for text in (
        "The model `gpt-4o-mini` does not exist",
        "Rate limit reached for requests. Please try again in 1s.",
        "model unreachable: ConnectError: All connection attempts failed",
        "risk-free",
        KEY_ECHO,  # a placeholder is not cut again
    ):
        assert without_key_shapes(text) == text


def test_any_eight_characters_of_a_configured_key_are_cut() -> None:
    key = "local-server-key-2f9c81d7e3"
    echoed = "401: key 'server-key-2f9c' refused"
    shown = without_key_echoes(echoed, [key])
    assert "server-key-2f9c" not in shown and "2f9c" not in shown.replace(KEY_ECHO, "")
    assert without_key_echoes("nothing of it here", [key]) == "nothing of it here"


@pytest.mark.parametrize(
    ("model", "api_base", "url"),
    [
        ("openai/gpt-4o", "", "https://api.openai.com/v1/models"),
        ("openai/qwen", "http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1/models"),
        ("hosted_vllm/qwen", "http://vllm:8000/v1", "http://vllm:8000/v1/models"),
        ("lm_studio/phi", "http://127.0.0.1:1234/v1", "http://127.0.0.1:1234/v1/models"),
        ("ollama_chat/llama3.1", "", "http://localhost:11434/api/tags"),
        ("ollama/llama3.1", "http://gpu:11434", "http://gpu:11434/api/tags"),
        ("hosted_vllm/qwen", "", None),  # no server named: a completion tells
        ("anthropic/claude-sonnet-4-5", "", None),  # no list to ask: a completion tells
        ("gpt-4o", "", None),
    ],
)
def test_the_list_a_check_asks_first(model: str, api_base: str, url: str | None) -> None:
    assert list_url(model, {"model": model, "api_base": api_base}) == url


def test_the_configured_models_are_the_default_and_each_animas_own() -> None:
    assert configured_models("openai/fake", ["", "openai/kai", ""]) == ["openai/fake", "openai/kai"]
    assert configured_models("", ["", ""]) == []
    assert configured_models("", ["ollama_chat/llama3.1"]) == ["ollama_chat/llama3.1"]
