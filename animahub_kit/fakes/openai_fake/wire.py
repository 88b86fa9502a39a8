"""The non-streaming ``chat.completion`` object and the ``usage`` every answer reports.

Tokens are counted as words (at least one per non-empty text) plus 3 per message or tool
call: not OpenAI's tokenizer, but stable, and growing with what was sent and answered.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from animahub_kit.fakes.openai_fake.script import JSON, Reply

SYSTEM_FINGERPRINT = "fp_fake0openai"


def new_completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:29]}"


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "".join(parts)
    return ""


def last_user_text(body: JSON) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def _count_tokens(text: str) -> int:
    return max(1, len(text.split())) if text else 0


def _prompt_tokens(body: JSON) -> int:
    messages = body.get("messages") or []
    return sum(
        _count_tokens(content_text(m.get("content"))) + 3 for m in messages if isinstance(m, dict)
    )


def _completion_tokens(reply: Reply) -> int:
    if reply.tool_calls:
        return sum(_count_tokens(json.dumps(c.arguments)) + 3 for c in reply.tool_calls)
    return _count_tokens(reply.text or "")


def usage_json(body: JSON, reply: Reply) -> JSON:
    prompt, completion = _prompt_tokens(body), _completion_tokens(reply)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def completion_json(body: JSON, reply: Reply) -> JSON:
    """A non-streaming ``chat.completion`` object."""
    message: JSON = {"role": "assistant", "content": reply.text, "refusal": None, "annotations": []}
    if reply.tool_calls:
        message["tool_calls"] = [c.to_message_json() for c in reply.tool_calls]
    return {
        "id": new_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
        ],
        "usage": usage_json(body, reply),
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }
