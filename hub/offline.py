"""The offline mode: answers without a language model, from what the hub knows.

It never pretends to be a model. It greets the person by name, says who the Anima is, what
it remembers of the conversation, and exactly how to configure a model.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable

from hub.llm import TurnContext
from hub.memory.redact import redact

_WORD_RE = re.compile(r"\S+\s*")
_HOW_TO = (
    "To give me a language model, set `model` in the `[llm]` section of `hub.toml` in the "
    'data folder (for example `model = "anthropic/claude-sonnet-4-5"` with '
    '`api_key = "env:ANTHROPIC_API_KEY"`, or `model = "ollama/llama3.1"` for a local Ollama), '
    "or export `ANIMAHUB_LLM__MODEL=...`, then restart the hub."
)


def _quote(text: str, limit: int = 120) -> str:
    """The person's words as the reply repeats them: never with a secret they pasted."""
    flat = " ".join(redact(text)[0].split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_SHORT_HOW_TO = (
    "_(Offline mode: no language model is configured. Set `model` under `[llm]` in "
    "`hub.toml`, or `ANIMAHUB_LLM__MODEL`, and restart the hub.)_"
)


def compose(ctx: TurnContext) -> str:
    earlier = [t for t in ctx.earlier_from_person if t.strip()]
    if earlier:
        return _follow_up(ctx, earlier)
    name = ctx.anima.capitalize()
    lines = [
        f"Hello {ctx.person.display_name}. I'm {name}, the team's "
        f"{ctx.anima_title.lower()}: I {ctx.anima_summary}.",
        "",
        "**No language model is configured, so I'm answering in offline mode.** I can't "
        "compose a real answer yet, but I keep everything you tell me, and I'll remember it "
        "once a model is set.",
        "",
    ]
    lines.append(f"This is the start of our conversation ({ctx.where}).")
    lines.extend(["", *_left_off(ctx)])
    lines.extend([f"You said: “{_quote(ctx.text, 300)}”", "", *_remembered(ctx), _HOW_TO])
    return "\n".join(lines)


def _follow_up(ctx: TurnContext, earlier: list[str]) -> str:
    """Later replies in a conversation: what was said so far, and a one-line reminder."""
    lines = [
        f"Noted, {ctx.person.display_name}: “{_quote(ctx.text, 300)}”",
        "",
        *_left_off(ctx),
        f"In this conversation you've sent me {len(earlier) + 1} messages. Before this one "
        "you said:",
        *(f"- “{_quote(t)}”" for t in earlier[-3:]),
        "",
        *_remembered(ctx),
        _SHORT_HOW_TO,
    ]
    return "\n".join(lines)


def _left_off(ctx: TurnContext) -> list[str]:
    """The handoff offered to this turn (hub/handoffs.py): offered, not assumed."""
    if not ctx.handoff:
        return []
    return [
        "Where we left off:",
        *(f"- {line}" for line in ctx.handoff),
        "Want to pick that up?",
        "",
    ]


def _remembered(ctx: TurnContext) -> list[str]:
    """What recall found for this message: the offline mode's way to answer about the past."""
    if not ctx.recalled_lines:
        return []
    return [
        "From my memory, what seems related:",
        *(f"- {_quote(line, 200)}" for line in ctx.recalled_lines[:5]),
        "",
    ]


# Something the offline mode can still do for a message (delegate a task asked for in plain
# words): what it did, said first in the reply, or None.
Act = Callable[[TurnContext], Awaitable[str | None]]


class OfflineResponder:
    def __init__(self, act: Act | None = None) -> None:
        self._act = act

    async def stream(self, ctx: TurnContext) -> AsyncIterator[str]:
        done = await self._act(ctx) if self._act is not None else None
        text = compose(ctx)
        if done:
            text = f"{_done_line(done)}\n\n{text}"
        # Streamed word by word so every platform's streaming path is exercised offline too.
        for match in _WORD_RE.finditer(text):
            yield match.group(0)


def _done_line(done: str) -> str:
    if done.startswith("error: "):
        return f"I could not hand that on: {done.removeprefix('error: ')}"
    return f"Done: {done}"
