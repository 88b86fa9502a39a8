"""A model call's failure has a kind: read from real litellm against the fake model server
(and a closed port), since litellm reports several failures as its own 500s."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from animahub_kit.fakes.openai_server import FakeOpenAI
from hub.model.client import LiteLLMCalls, LLMError
from hub.model.failure import FailureKind

HI = [{"role": "user", "content": "hi"}]


def _failure(**kwargs: Any) -> LLMError:
    async def call() -> None:
        await LiteLLMCalls().complete(HI, {"num_retries": 0, "timeout": 5, **kwargs})

    with pytest.raises(LLMError) as raised:
        asyncio.run(call())
    return raised.value


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, FailureKind.KEY_REFUSED),
        (403, FailureKind.KEY_REFUSED),
        (404, FailureKind.MODEL_UNKNOWN),
        (429, FailureKind.RATE_LIMITED),
        (500, FailureKind.SERVER_ERROR),
        (503, FailureKind.SERVER_ERROR),
        (400, FailureKind.BAD_REQUEST),
    ],
)
def test_a_provider_status_has_its_kind(fake_openai: FakeOpenAI, status: int, kind: str) -> None:
    fake_openai.state.fail_next(status, retry_after=7 if status == 429 else None)
    error = _failure(model="openai/kai", api_base=f"{fake_openai.url}/v1", api_key="k")
    assert error.kind == kind
    assert error.retryable == error.kind.retryable
    if status == 429:
        assert error.retry_after == 7


def test_a_closed_port_is_unreachable_and_retryable() -> None:
    error = _failure(
        model="openai/kai", api_base=f"http://127.0.0.1:{_closed_port()}/v1", api_key="k"
    )
    assert error.kind == FailureKind.UNREACHABLE
    assert error.retryable


def test_no_key_for_an_openai_route_is_a_refused_key_not_a_server_error() -> None:
    """litellm answers a request the openai SDK would not send (no key) as its own 500."""
    error = _failure(model="openai/kai", api_base=f"http://127.0.0.1:{_closed_port()}/v1")
    assert error.kind == FailureKind.KEY_REFUSED
    assert not error.retryable


def test_a_provider_no_route_knows_is_an_unknown_model() -> None:
    error = _failure(model="nosuchprovider/some-model", api_key="k")
    assert error.kind == FailureKind.MODEL_UNKNOWN
    assert not error.retryable


def test_every_kind_has_words_for_the_person_and_a_fix_for_the_operator() -> None:
    for kind in FailureKind:
        assert kind.for_person.endswith(".")
        assert kind.fix


def test_the_kind_crosses_the_model_workers_pipe() -> None:
    sent = LLMError("model error (429): slow down", kind=FailureKind.RATE_LIMITED, retry_after=3)
    got = LLMError.from_wire(sent.wire())
    assert (got.kind, got.retryable, got.retry_after, str(got)) == (
        FailureKind.RATE_LIMITED,
        True,
        3.0,
        str(sent),
    )
