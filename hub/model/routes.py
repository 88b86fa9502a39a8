"""What a litellm route needs from `[llm]`, read from the model's name alone.

A model id is `<route>/<name>`: `openai/…` speaks the OpenAI wire format to `api_base`
(OpenAI itself, or a local server: vLLM, LM Studio, llama.cpp's llama-server, Ollama's
`/v1`), `ollama_chat/…` speaks Ollama's own `/api/chat`. Two of the ways a local model
goes wrong are settled here, without importing litellm (the hub process never does when
model workers run it):

* An OpenAI-compatible local server needs no key, but the openai SDK under litellm refuses
  to send a request without one ("Missing credentials", which litellm answers as a 500 of
  its own). So when `api_base` is set for the `openai/` route and no key is configured
  anywhere litellm would look, the hub sends `PLACEHOLDER_KEY`: the server ignores it, or,
  if it was started with a key of its own, refuses it with a 401 the hub explains as
  "key refused" (hub/model/failure.py).
* Settings that cannot work, or work badly, are found at start and logged, one warning
  each, naming the fix (`setup_problems`): a model name without a route while `api_base`
  is set, the `ollama/` route (litellm forces JSON output on it when tools are sent, and
  the hub always sends tools), an `ollama_chat/` route pointed at Ollama's `/v1`, and the
  `openai/` route with neither a key nor an `api_base`.

docs/models.md has the lines for each server and what each symptom means.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from hub.settings import LLMSection

# Sent as the key to an OpenAI-compatible server at `api_base` when none is configured.
# Not a secret: a server that checks keys refuses it, and the hub then says "key refused".
PLACEHOLDER_KEY = "animahub-no-key"

# Where litellm's openai route looks for a key, and for a base URL, besides the call's own.
OPENAI_KEY_VARIABLES = ("OPENAI_API_KEY",)
OPENAI_BASE_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_BASE")


@dataclass(frozen=True, slots=True)
class ModelSetup:
    """One model as the hub will call it: its id and the `[llm]` settings that reach it."""

    model: str
    api_base: str = ""
    has_key: bool = False  # `[llm] api_key` is set

    @property
    def route(self) -> str:
        """litellm's provider prefix (`openai`, `ollama_chat`, …); "" when there is none."""
        return self.model.split("/", 1)[0].lower() if "/" in self.model else ""


def model_setup(s: LLMSection, model: str) -> ModelSetup:
    """`model` as the [llm] settings will call it."""
    has_key = s.api_key is not None and bool(s.api_key.get_secret_value())
    return ModelSetup(model, s.api_base, has_key)


def litellm_kwargs(s: LLMSection, model: str) -> dict[str, Any]:
    """The arguments of every litellm call the hub makes, from the [llm] settings."""
    # Retries are the hub's (hub/turns/retry.py), so neither litellm nor the openai SDK under
    # it (2 retries of its own by default) may add theirs. The deadlines are the hub's too
    # (hub/model/deadlines.py); `timeout` only bounds each HTTP read.
    kwargs: dict[str, Any] = {
        "model": model,
        "timeout": s.timeout_s,
        "num_retries": 0,
        "max_retries": 0,
    }
    if s.api_base:
        kwargs["api_base"] = s.api_base
    if key := (s.api_key.get_secret_value() if s.api_key is not None else ""):
        kwargs["api_key"] = key
    elif placeholder := placeholder_key(model_setup(s, model)):
        kwargs["api_key"] = placeholder  # a local OpenAI-compatible server
    if s.temperature is not None:
        kwargs["temperature"] = s.temperature
    if s.mock_response:
        kwargs["mock_response"] = s.mock_response
    return kwargs


def placeholder_key(setup: ModelSetup, environ: Mapping[str, str] | None = None) -> str | None:
    """The key to send for `setup`, when litellm would otherwise refuse to call at all: the
    `openai/` route, aimed at a server of one's own (`api_base`), with no key anywhere."""
    env = os.environ if environ is None else environ
    if setup.route != "openai" or not setup.api_base or setup.has_key:
        return None
    if any(env.get(name) for name in OPENAI_KEY_VARIABLES):
        return None  # litellm sends that one, as it always has
    return PLACEHOLDER_KEY


def setup_problems(setup: ModelSetup, environ: Mapping[str, str] | None = None) -> list[str]:
    """What will fail, or answer badly, with these settings, each with its fix."""
    env = os.environ if environ is None else environ
    model, base = setup.model, setup.api_base
    name = model.split("/", 1)[-1]
    problems: list[str] = []
    if not setup.route and base:
        problems.append(
            f'model "{model}" names no route, so litellm does not know how to talk to '
            f'{base}: for an OpenAI-compatible server write model = "openai/{model}"'
        )
    if setup.route == "ollama":
        problems.append(
            f'model "{model}": the ollama/ route uses Ollama\'s /api/generate, where litellm '
            f"forces JSON answers when tools are offered (the hub always offers them): "
            f'write model = "ollama_chat/{name}"'
        )
    if setup.route in ("ollama", "ollama_chat") and _path_of(base).endswith("/v1"):
        problems.append(
            f'model "{model}" talks to Ollama\'s own API, which is not under /v1: write '
            f'api_base = "{base.rstrip("/").removesuffix("/v1")}" (or use '
            f'model = "openai/{name}" to go through Ollama\'s /v1)'
        )
    elsewhere = any(env.get(v) for v in (*OPENAI_KEY_VARIABLES, *OPENAI_BASE_VARIABLES))
    if setup.route == "openai" and not base and not setup.has_key and not elsewhere:
        problems.append(
            f'model "{model}" goes to api.openai.com, and no key is set: set [llm] api_key = '
            '"env:OPENAI_API_KEY", or, for a server of your own, [llm] api_base (README)'
        )
    return problems


def hub_model_problems(s: LLMSection, anima_models: Iterable[str]) -> list[str]:
    """`setup_problems` of every model the hub will call: [llm]'s and the Animas' own."""
    models = sorted({s.model, *anima_models} - {""})
    return [problem for model in models for problem in setup_problems(model_setup(s, model))]


def _path_of(url: str) -> str:
    return urlsplit(url).path.rstrip("/") if url else ""
