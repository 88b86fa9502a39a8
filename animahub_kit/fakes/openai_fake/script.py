"""What the fake model is scripted to answer: a reply (text or tool calls), or a failure."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One function call the fake model asks for."""

    name: str
    arguments: JSON
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")

    def to_message_json(self) -> JSON:
        """The ``message.tool_calls[i]`` entry of a non-streaming answer."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }


@dataclass(frozen=True)
class Reply:
    """A scripted assistant answer: text, or tool calls (then ``text`` is None)."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class Failure:
    """A scripted HTTP error answer."""

    status: int = 429
    retry_after: float | None = None
    message: str | None = None
