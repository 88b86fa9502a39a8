"""A handoff note: where a person left off with an Anima, written when a DM session ends.

Three parts, each short: what was discussed, the questions still open, the next steps. The
offline rules here are what every hub has; `LLMDistiller.handoff` asks the model for the
same three parts and falls back to these rules.

Offline rules, in short:

- **discussed**: the first sentence of each of the person's first three messages;
- **open questions**: the person's questions from their last three messages (but those
  already the topic), and the Anima's own questions in its last reply (nobody answered
  those: the session ended);
- **next steps**: sentences on either side that say something will be done ("I'll", "we
  will", "let's", "next", "tomorrow", "we need", "remind me", a weekday, …), the latest three.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hub.memory.text import clip, is_placeholder
from hub.redaction.redact import redact

PARTS_MAX = 3  # open questions and next steps kept, each
_PART_CHARS = 200
_DISCUSSED_CHARS = 400
_SENTENCES = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_STEP_CUES = re.compile(
    r"\b(?:i'?ll|i will|we'?ll|we will|let'?s|next|tomorrow|tonight|later today|todo|to-do|"
    r"need to|needs to|we need|i need|have to|has to|going to|plan to|remind me|"
    r"follow up|follow-up|"
    r"deadline|due|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|eod|noon)|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    re.IGNORECASE,
)


class Said(Protocol):
    """A line of the session (`hub.memory.distill.SessionTurn`)."""

    @property
    def role(self) -> str: ...  # "user" | "assistant"

    @property
    def text(self) -> str: ...


@dataclass(frozen=True, slots=True)
class HandoffNote:
    discussed: str
    open_questions: tuple[str, ...] = field(default_factory=tuple)
    next_steps: tuple[str, ...] = field(default_factory=tuple)

    @property
    def empty(self) -> bool:
        return not (self.discussed or self.open_questions or self.next_steps)

    def redacted(self) -> HandoffNote:
        """Never a secret in a handoff: it is shown again, on another platform."""

        def clean(text: str, limit: int) -> str:
            return clip(redact(text)[0], limit)

        return HandoffNote(
            clean(self.discussed, _DISCUSSED_CHARS),
            tuple(clean(q, _PART_CHARS) for q in self.open_questions[:PARTS_MAX] if q.strip()),
            tuple(clean(s, _PART_CHARS) for s in self.next_steps[:PARTS_MAX] if s.strip()),
        )


def offline_handoff(turns: Sequence[Said]) -> HandoffNote:
    """The three parts by the rules above; empty when the person said nothing."""
    said = [t for t in turns if t.text.strip() and not is_placeholder(t.text)]
    theirs = [t for t in said if t.role == "user"]
    if not theirs:
        return HandoffNote("")
    firsts = _unique([_first(t.text).rstrip(".;") for t in theirs])
    discussed = "; ".join(firsts[:PARTS_MAX])
    questions = [s for t in theirs[-PARTS_MAX:] for s in _sentences(t.text) if s.endswith("?")]
    if said[-1].role == "assistant":
        questions += [s for s in _sentences(said[-1].text) if s.endswith("?")]
    shown = {first.casefold() for first in firsts[:PARTS_MAX]}  # already said as the topic
    questions = [q for q in questions if q.rstrip(".;").casefold() not in shown]
    steps = [s for t in said for s in _sentences(t.text) if _STEP_CUES.search(s)]
    steps = [s for s in steps if not s.endswith("?")]
    return HandoffNote(
        discussed,
        tuple(_unique(questions)[-PARTS_MAX:]),
        tuple(_unique(steps)[-PARTS_MAX:]),
    ).redacted()


def _sentences(text: str) -> list[str]:
    return [" ".join(p.split()) for p in _SENTENCES.split(text.strip()) if p.strip()]


def _first(text: str) -> str:
    parts = _sentences(text)
    return clip(parts[0], 120) if parts else ""


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    kept: list[str] = []
    for item in items:
        key = item.casefold()
        if item and key not in seen:
            seen.add(key)
            kept.append(item)
    return kept
