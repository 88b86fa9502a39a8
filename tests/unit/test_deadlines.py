"""The hub's deadlines around a model call (hub/model/deadlines.py), with real litellm against the
fake OpenAI server: a server that never sends its headers, or never finishes a completion,
is cut off as `timing out`, and the request is dropped (its client leaves)."""

from __future__ import annotations

from typing import Any

import pytest

from animahub_kit.contract.harness import eventually
from hub.model.client import LiteLLMCalls, LLMError
from hub.model.deadlines import BoundedCalls
from hub.model.failure import FailureKind
from hub.settings import LLMSection


def kwargs(fake: Any) -> dict[str, Any]:
    return {"model": "openai/fake", "api_base": f"{fake.url}/v1", "api_key": "x", "max_retries": 0}


async def bounded(fake: Any, first_token_timeout_s: float, timeout_s: float) -> BoundedCalls:
    """Deadlines around litellm in this process, once litellm has made a first call (which
    sets itself up for seconds on a loaded machine: not what these deadlines are about)."""
    inner = LiteLLMCalls()
    await inner.complete([{"role": "user", "content": "hi"}], kwargs(fake))
    fake.reset()
    settings = LLMSection(first_token_timeout_s=first_token_timeout_s, timeout_s=timeout_s)
    return BoundedCalls(inner, settings)


async def test_no_headers_within_the_first_token_deadline_is_timing_out(fake_openai: Any) -> None:
    calls = await bounded(fake_openai, first_token_timeout_s=2, timeout_s=60)
    fake_openai.hold_next()  # the request is taken, and nothing comes back
    with pytest.raises(LLMError) as failed:
        async for _ in calls.stream_round([{"role": "user", "content": "hi"}], kwargs(fake_openai)):
            pass
    assert failed.value.kind is FailureKind.TIMING_OUT and failed.value.retryable
    assert "no first token in 2 s" in str(failed.value)
    await eventually(lambda: fake_openai.abandoned_count == 1)  # the request was dropped


async def test_a_completion_past_the_overall_bound_is_timing_out(fake_openai: Any) -> None:
    calls = await bounded(fake_openai, first_token_timeout_s=60, timeout_s=2)
    fake_openai.hold_next()
    with pytest.raises(LLMError) as failed:
        await calls.complete([{"role": "user", "content": "hi"}], kwargs(fake_openai))
    assert failed.value.kind is FailureKind.TIMING_OUT
    await eventually(lambda: fake_openai.abandoned_count == 1)
