"""Why a model call failed, in words a person and an operator read.

Every failure of a model call is one `FailureKind`. The kind says whether trying again can
help (`retryable`), what the person who asked is told (`for_person`) and what the operator
should do about it (`fix`). The runtime, the task runner, the agenda and the model's health
all read the same kind, so the hub says the same thing everywhere.
"""

from __future__ import annotations

import re
from enum import StrEnum


class FailureKind(StrEnum):
    UNREACHABLE = "unreachable"  # no connection to the model's server
    TIMING_OUT = "timing out"  # connected, but no answer in time
    RATE_LIMITED = "rate limited"  # 429: the provider asks us to slow down
    SERVER_ERROR = "server error"  # 5xx: the provider failed
    KEY_REFUSED = "key refused"  # 401/403, or no key at all
    MODEL_UNKNOWN = "model unknown"  # 404, or a model name no route knows
    CONTENT_REFUSED = "content refused"  # the provider's content filter
    TOOLS_UNSUPPORTED = "tools unsupported"  # a local server not started for tool calling
    BAD_REQUEST = "bad request"  # 400 of another kind (too long a prompt, a bad argument)
    INTERNAL = "internal"  # a bug of ours, or an SDK failure nobody mapped

    @property
    def retryable(self) -> bool:
        return self in _RETRYABLE

    @property
    def for_person(self) -> str:
        """One plain sentence for the person whose message failed."""
        return _FOR_PERSON[self]

    @property
    def fix(self) -> str:
        """What the operator should do, in one sentence."""
        return _FIX[self]


_RETRYABLE = frozenset(
    {
        FailureKind.UNREACHABLE,
        FailureKind.TIMING_OUT,
        FailureKind.RATE_LIMITED,
        FailureKind.SERVER_ERROR,
        FailureKind.INTERNAL,
    }
)

_FOR_PERSON = {
    FailureKind.UNREACHABLE: "The AI model cannot be reached right now.",
    FailureKind.TIMING_OUT: "The AI model is not answering in time right now.",
    FailureKind.RATE_LIMITED: "The AI model is busy (its provider asked us to slow down).",
    FailureKind.SERVER_ERROR: "The AI model's provider is failing right now.",
    FailureKind.KEY_REFUSED: "The hub's key for the AI model was refused, so I cannot answer "
    "until an admin fixes it.",
    FailureKind.MODEL_UNKNOWN: "The AI model this hub is set to use does not exist there, so I "
    "cannot answer until an admin fixes it.",
    FailureKind.CONTENT_REFUSED: "The AI model's provider refused to answer this message.",
    FailureKind.TOOLS_UNSUPPORTED: "The AI model's server is not set up to use tools, so I "
    "cannot answer until an admin fixes it.",
    FailureKind.BAD_REQUEST: "The AI model could not take this message (it may be too long).",
    FailureKind.INTERNAL: "Something went wrong inside the hub while answering.",
}

_FIX = {
    FailureKind.UNREACHABLE: "check that the model server at [llm] api_base (or the "
    "provider) is up and reachable from the hub",
    FailureKind.TIMING_OUT: "the model is slow or stalled: check the server's load, or raise "
    "[llm] first_token_timeout_s / timeout_s",
    FailureKind.RATE_LIMITED: "the provider's rate limit was hit: lower [scheduler] "
    "max_model_calls or raise the account's limit",
    FailureKind.SERVER_ERROR: "the provider is failing: see its status page; the hub retries",
    FailureKind.KEY_REFUSED: "set a valid key in [llm] api_key (as env:NAME) or the provider's "
    "environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, …); a local server started with "
    "--api-key needs that key (docs/models.md)",
    FailureKind.MODEL_UNKNOWN: "check the model name in [llm] model (or the Anima's model:) "
    "and its provider prefix, e.g. openai/…, anthropic/…, ollama_chat/…; for a server of your "
    "own also [llm] api_base, which ends in /v1 for the openai/ route (docs/models.md)",
    FailureKind.CONTENT_REFUSED: "the provider's content filter refused the prompt; nothing "
    "to fix in the hub",
    FailureKind.TOOLS_UNSUPPORTED: "start the model server with tool calling on (vLLM: "
    "--enable-auto-tool-choice --tool-call-parser …; llama-server: --jinja; Ollama: a model "
    "that supports tools), as docs/models.md shows",
    FailureKind.BAD_REQUEST: "the provider rejected the request: see the error in the log",
    FailureKind.INTERNAL: "a bug in the hub or an SDK: see the traceback in the log",
}


_LITELLM_WORDS = (
    # A local server refusing the tools every turn offers, in vLLM's, llama-server's and
    # Ollama's words (llama-server says it with a 500, which is no outage to retry).
    (
        ("--enable-auto-tool-choice", "requires --jinja", "does not support tools"),
        FailureKind.TOOLS_UNSUPPORTED,
    ),
    (("missing credentials", "api_key client option must be set"), FailureKind.KEY_REFUSED),
    (
        ("connection error", "connection refused", "name or service not known"),
        FailureKind.UNREACHABLE,
    ),
    (("timed out", "timeout"), FailureKind.TIMING_OUT),
)


def kind_of_status(status: int, message: str = "") -> FailureKind:
    """The kind of an HTTP error answer from a provider."""
    lowered = message.lower()
    # litellm answers some failures that never reached a provider as a 500 of its own:
    # their words are all that says what happened.
    for words, kind in _LITELLM_WORDS:
        if any(w in lowered for w in words):
            return kind
    if status in (401, 403):
        return FailureKind.KEY_REFUSED
    if status == 404:
        return FailureKind.MODEL_UNKNOWN
    if status == 429:
        return FailureKind.RATE_LIMITED
    if status in (408, 504):
        return FailureKind.TIMING_OUT
    if status == 409 or status >= 500:
        return FailureKind.SERVER_ERROR
    if "content" in lowered and ("policy" in lowered or "filter" in lowered):
        return FailureKind.CONTENT_REFUSED
    if "provider not provided" in lowered or (
        "model" in lowered and ("not found" in lowered or "does not exist" in lowered)
    ):
        return FailureKind.MODEL_UNKNOWN
    return FailureKind.BAD_REQUEST


# How providers echo a key they refused: a known key prefix with what follows it, or a run
# of asterisks masking the middle (`sk-proj-****abcd`, `AIza…`, `gsk_12ab****`). A key in
# full is the redactor's (hub/redaction/redact.py); these parts of one are not keys to it.
_KEY_SHAPE = re.compile(
    r"(?<![\w:-])(?:sk|rk|pk|gsk|xai|hf|nvapi|r8|key)[-_][\w*…-]{4,}"
    r"|(?<![\w*])[\w-]*\*{3,}[\w*-]*"
    r"|(?<!\w)AIza[\w-]{6,}",
)
KEY_ECHO = "[REDACTED:key-echo]"


def without_key_shapes(text: str) -> str:
    """A model's error with what looks like a key, or part of one, replaced (a placeholder
    already there is left: `[REDACTED:key-echo]` is not a key)."""
    return _KEY_SHAPE.sub(KEY_ECHO, text)
