"""One litellm call, in this process: the unit the model workers run.

`ModelClient` is what the rest of the hub asks a model through: a streamed round of a
tool-calling loop, or one plain completion. `LiteLLMCalls` makes those calls here;
`hub.model.pool.ModelWorkers` makes the same calls in worker processes (`hub.model.worker`),
so litellm's CPU (about 5 ms per call, 0.2 ms per streamed chunk) does not queue on the
hub's event loop.

litellm is imported lazily: it takes seconds to import and the offline default never needs it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from hub.model.failure import FailureKind, kind_of_status, without_key_shapes
from hub.redaction.redact import redact

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens model calls took: the prompts' and the answers'. litellm reports them for
    every provider, counting them itself where the provider does not."""

    prompt: int = 0
    completion: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt + other.prompt, self.completion + other.completion)

    def words(self) -> str:
        return f"{self.prompt:,} tokens in, {self.completion:,} out"


# A round yields text deltas (str), then, only if the model called tools, the assistant
# message that carries the calls (a dict in OpenAI's chat format), then what it took (Usage).
RoundPiece = str | dict[str, Any] | Usage


class LLMError(Exception):
    """The model could not answer. `kind` says why (hub/model/failure.py), and whether a
    later attempt may succeed; `retry_after` is the provider's own hint, in seconds."""

    def __init__(
        self,
        message: str,
        retryable: bool | None = None,
        kind: FailureKind = FailureKind.INTERNAL,
        retry_after: float | None = None,
    ) -> None:
        # A provider's error may quote the request, the key included: the message is kept
        # (inbox, health, logs) and told to the sender, so it is redacted here, once; a
        # provider echoes a refused key masked in part (`sk-proj-****abcd`): cut too.
        super().__init__(without_key_shapes(redact(message)[0]))
        self.kind = kind
        self.retryable = kind.retryable if retryable is None else retryable
        self.retry_after = retry_after

    def wire(self) -> dict[str, Any]:
        """The error as a model worker sends it to the hub (hub/model/worker.py)."""
        return {
            "error": str(self),
            "retryable": self.retryable,
            "kind": self.kind.value,
            "retry_after": self.retry_after,
        }

    @classmethod
    def from_wire(cls, event: dict[str, Any]) -> LLMError:
        kind = FailureKind(event.get("kind") or FailureKind.INTERNAL.value)
        after = event.get("retry_after")
        return cls(
            str(event["error"]),
            retryable=bool(event["retryable"]),
            kind=kind,
            retry_after=float(after) if after is not None else None,
        )


class ModelClient(Protocol):
    async def warm(self, model: str) -> None:
        """Be ready to send a call (litellm imported, a worker up): the deadlines of a
        call (hub/model/deadlines.py) count from the request, not from the hub's own start-up."""

    def stream_round(
        self, messages: list[dict[str, Any]], kwargs: dict[str, Any]
    ) -> AsyncIterator[RoundPiece]: ...

    async def complete(self, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str: ...


class LiteLLMCalls:
    """litellm on the caller's event loop. `kwargs` are `hub.model.routes.litellm_kwargs`
    (+ tools)."""

    def __init__(self) -> None:
        self._priced: set[str] = set()

    async def warm(self, model: str) -> None:
        _import()  # what takes seconds; pricing the model waits for its call's api_base

    def _litellm(self, kwargs: dict[str, Any]) -> tuple[Any, Any]:
        litellm, openai = _import()
        model = kwargs["model"]
        if model not in self._priced:
            _price_unknown_model(litellm, model, kwargs.get("api_base"))
            self._priced.add(model)
        return litellm, openai

    async def stream_round(
        self, messages: list[dict[str, Any]], kwargs: dict[str, Any]
    ) -> AsyncIterator[RoundPiece]:
        litellm, openai = self._litellm(kwargs)
        chunks: list[Any] = []
        wants_tools = False
        with _as_llm_errors(openai):
            # include_usage: litellm ends the stream with a usage chunk for every provider
            # (dropping the option where the provider has none, and counting itself).
            response = await litellm.acompletion(
                messages=messages, stream=True, stream_options={"include_usage": True}, **kwargs
            )
            try:
                async for chunk in response:
                    chunks.append(chunk)
                    delta = chunk.choices[0].delta if chunk.choices else None
                    if delta is None:
                        continue
                    wants_tools = wants_tools or bool(delta.tool_calls)
                    if delta.content:
                        yield delta.content
            finally:
                # Cut off by a deadline (hub/model/deadlines.py) or a caller that left: the HTTP
                # stream is closed now, so the model server sees the request go.
                close = getattr(response, "aclose", None)
                if close is not None:
                    await close()
        if wants_tools:
            # Rebuilding the message costs ~2 ms, so it is done only when tools were called.
            built: Any = litellm.stream_chunk_builder(chunks, messages=messages)
            yield dict(built.choices[0].message.model_dump(exclude_none=True))
        used = next((c.usage for c in reversed(chunks) if getattr(c, "usage", None)), None)
        if used is not None:
            yield Usage(int(used.prompt_tokens or 0), int(used.completion_tokens or 0))

    async def complete(self, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        litellm, openai = self._litellm(kwargs)
        with _as_llm_errors(openai):
            response: Any = await litellm.acompletion(messages=messages, **kwargs)
        return str(response.choices[0].message.content or "")


@contextmanager
def _as_llm_errors(openai: Any) -> Iterator[None]:
    """litellm's failures as LLMError, retryable or not (its mapped errors subclass the
    openai SDK's)."""
    try:
        yield
    except openai.APIStatusError as exc:
        raise classify(exc.status_code, exc, _retry_after(exc)) from exc
    except openai.APITimeoutError as exc:  # a subclass of APIConnectionError: first
        raise LLMError(f"model timed out: {exc}", kind=FailureKind.TIMING_OUT) from exc
    except openai.APIConnectionError as exc:
        raise LLMError(f"model unreachable: {exc}", kind=FailureKind.UNREACHABLE) from exc
    except openai.APIError as exc:  # litellm's own APIError (a 403, say) carries a status
        status = getattr(exc, "status_code", None)
        raise classify(int(status) if status else 500, exc, _retry_after(exc)) from exc
    except openai.OpenAIError as exc:
        # The openai SDK refuses to send a request without a key ("Missing credentials"),
        # before any status exists; litellm re-raises it unmapped.
        if "api_key" in str(exc) or "credentials" in str(exc).lower():
            raise LLMError(f"no model key: {exc}", kind=FailureKind.KEY_REFUSED) from exc
        raise


def _retry_after(exc: Any) -> float | None:
    """The provider's Retry-After header, in seconds, when it gave one."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _import() -> tuple[Any, Any]:
    import litellm
    import openai

    litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout
    return litellm, openai


def _price_unknown_model(litellm: Any, model: str, api_base: str | None = None) -> None:
    """Give a model litellm has no price for (a local or new model) a price of zero.

    Otherwise litellm searches its whole cost map for a fallback after every call, about
    1.2 ms of CPU each time (bench/README.md), to arrive at no price anyway. For an Ollama
    model litellm asks the server (`/api/show`): the one at `api_base`, not its default.
    """
    try:
        litellm.get_model_info(model, api_base=api_base or None)
    except litellm.ModelNotMappedError:
        free = {
            "input_cost_per_token": 0.0,
            "output_cost_per_token": 0.0,
            "cache_creation_input_token_cost": 0.0,
            "cache_read_input_token_cost": 0.0,
            "mode": "chat",
        }
        provider = model.split("/", 1)[0] if "/" in model else "openai"
        litellm.register_model({model: {**free, "litellm_provider": provider}})
        log.info("litellm has no price for %s: counted as free", model)


def classify(status: int, exc: Exception, retry_after: float | None = None) -> LLMError:
    kind = kind_of_status(status, str(exc))
    return LLMError(f"model error ({status}): {exc}", kind=kind, retry_after=retry_after)
