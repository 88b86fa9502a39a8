"""The cheapest call that tells whether a failing model works again (hub/model/health.py).

Which call depends on why it failed:

- `unreachable` (no connection to the server): is the server there again? Where the route
  has a list of models, listing them answers that without generating anything: `GET
  {api_base}/models` for an OpenAI-compatible server (`openai/`, `hosted_vllm/`,
  `lm_studio/`, …; OpenAI's own API when no api_base is set), `GET {api_base}/api/tags` for
  Ollama (`ollama/`, `ollama_chat/`). A route without one (or a server that answers the
  list with 404) is asked for a completion instead.
- anything else (timing out, rate limited, server error, key refused, model unknown): only
  the call that failed can tell, so it is made again as small as it gets: one user word,
  `max_tokens = 1`, no tools, through the same `ModelClient` (a model worker or this loop).
  A call the provider refuses (a bad key, an unknown model, a rate limit) costs nothing.

A check that fails raises `LLMError`, with the same kinds and the same redaction as a turn.
litellm is never imported here: with model workers the hub process never loads it.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from hub.model.client import LLMError, ModelClient
from hub.model.failure import FailureKind, kind_of_status

# Routes that serve OpenAI's `GET /models` at their api_base.
_OPENAI_COMPATIBLE = frozenset(
    {"openai", "hosted_vllm", "lm_studio", "llamafile", "openai_like", "custom_openai"}
)
_OLLAMA = frozenset({"ollama", "ollama_chat"})
_OPENAI_BASE = "https://api.openai.com/v1"
_OLLAMA_BASE = "http://localhost:11434"
_LIST_TIMEOUT_S = 10.0
_CHECK_TIMEOUT_S = 30.0  # a completion check: a model that needs longer is timing out
_PROBE_MESSAGES = [{"role": "user", "content": "ping"}]
# Answers that say the server has no such list: ask for a completion instead.
_NO_LIST = frozenset({404, 405, 501})


def list_url(model: str, kwargs: dict[str, Any]) -> str | None:
    """The URL that lists the route's models, or None when the route has none."""
    provider, _, _ = model.partition("/")
    base = str(kwargs.get("api_base") or "").rstrip("/")
    if provider in _OLLAMA:
        return f"{base or _OLLAMA_BASE}/api/tags"
    if provider in _OPENAI_COMPATIBLE and (base or provider == "openai"):
        return f"{base or _OPENAI_BASE}/models"
    return None


async def check(client: ModelClient, model: str, kwargs: dict[str, Any], kind: FailureKind) -> str:
    """Check `model` with the cheapest call that answers for a failure of `kind`; raises
    LLMError when it still fails. Returns which call it made, for the log."""
    url = list_url(model, kwargs) if kind is FailureKind.UNREACHABLE else None
    if url is not None and await _listed(url, model, kwargs):
        return f"GET {url}"
    small = {k: v for k, v in kwargs.items() if k not in ("tools", "tool_choice")}
    small["max_tokens"] = 1
    small["timeout"] = min(float(kwargs.get("timeout") or _CHECK_TIMEOUT_S), _CHECK_TIMEOUT_S)
    await client.complete(_PROBE_MESSAGES, small)
    return "a completion of max_tokens=1"


async def _listed(url: str, model: str, kwargs: dict[str, Any]) -> bool:
    """True when the list answered; False when the server has no list (ask otherwise)."""
    headers = {}
    if key := _key(model, kwargs):
        headers["Authorization"] = f"Bearer {key}"
    try:
        async with httpx.AsyncClient(timeout=_LIST_TIMEOUT_S) as http:
            response = await http.get(url, headers=headers)
    except httpx.TimeoutException as exc:
        raise LLMError(f"model timed out: {exc}", kind=FailureKind.TIMING_OUT) from exc
    except httpx.HTTPError as exc:  # refused, reset, no such host: nothing answered
        what = f"{type(exc).__name__}: {exc}"
        raise LLMError(f"model unreachable: {what}", kind=FailureKind.UNREACHABLE) from exc
    if response.status_code in _NO_LIST:
        return False
    if response.status_code >= 400:
        text = response.text[:500]
        kind = kind_of_status(response.status_code, text)
        raise LLMError(f"model error ({response.status_code}): {text}", kind=kind)
    return True


def _key(model: str, kwargs: dict[str, Any]) -> str:
    """The key litellm would send: the configured one, else OpenAI's environment variable."""
    if key := kwargs.get("api_key"):
        return str(key)
    if model.startswith("openai/"):
        return os.environ.get("OPENAI_API_KEY", "")
    return ""
