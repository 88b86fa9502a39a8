"""The hub's own deadlines around every model call: a first token, and an end.

litellm's `timeout` does not bound a streamed call: it becomes the HTTP client's timeout
for each read, the openai SDK tries a timed-out request again on its own, and what
`stream_timeout` means has changed between litellm releases (BerriAI/litellm#19909,
#19184). A model that accepts the request and never answers held a turn for 376 s. So the
hub bounds the call itself, around the stream, the same way whether litellm runs in this
process or in a model worker (leaving the stream early cancels the call there):

- no first piece (text, a tool call, or the usage) within `[llm] first_token_timeout_s`;
- the call not finished within `[llm] timeout_s` (a stream stalled half way, a completion
  that never returns).

Either raises `LLMError(kind=TIMING_OUT)`: a transient failure, retried like an outage.
The clock starts once the call can be sent (`ModelClient.warm`: litellm imported in this
process, or a model worker ready), so the hub's own start-up is not counted as the model's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from hub.model.client import LLMError, ModelClient, RoundPiece
from hub.model.failure import FailureKind
from hub.settings import LLMSection


class BoundedCalls:
    """A `ModelClient` whose calls end by the [llm] deadlines, or fail as timing out."""

    def __init__(self, inner: ModelClient, settings: LLMSection) -> None:
        self._inner = inner
        self._settings = settings

    async def warm(self, model: str) -> None:
        await self._inner.warm(model)

    async def stream_round(
        self, messages: list[dict[str, Any]], kwargs: dict[str, Any]
    ) -> AsyncIterator[RoundPiece]:
        await self._inner.warm(kwargs["model"])
        loop = asyncio.get_running_loop()
        started = loop.time()
        end = started + self._settings.timeout_s
        first = min(end, started + self._settings.first_token_timeout_s)
        deadline, what = first, f"no first token in {self._settings.first_token_timeout_s:g} s"
        stream = self._inner.stream_round(messages, kwargs)
        async with contextlib.aclosing(_closable(stream)) as pieces:
            while True:
                bound = asyncio.timeout_at(deadline)
                try:
                    async with bound:
                        piece = await anext(pieces)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    if not bound.expired():
                        raise  # the stream's own, not our deadline: the caller maps it
                    raise LLMError(
                        f"model timed out: {what}", kind=FailureKind.TIMING_OUT
                    ) from None
                deadline, what = end, f"not finished in {self._settings.timeout_s:g} s"
                yield piece

    async def complete(self, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        await self._inner.warm(kwargs["model"])
        bound = asyncio.timeout(self._settings.timeout_s)
        try:
            async with bound:
                return await self._inner.complete(messages, kwargs)
        except TimeoutError:
            if not bound.expired():
                raise
            raise LLMError(
                f"model timed out: no answer in {self._settings.timeout_s:g} s",
                kind=FailureKind.TIMING_OUT,
            ) from None


async def _closable(stream: AsyncIterator[RoundPiece]) -> AsyncGenerator[RoundPiece, None]:
    """`stream` as an async generator, so that leaving early closes it (and so cancels the
    call) now, not when it is collected."""
    try:
        async for piece in stream:
            yield piece
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
