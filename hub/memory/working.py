"""Working memory: the recent turns of a conversation, trimmed to a token budget."""

from __future__ import annotations

import math
from typing import NamedTuple

from sqlalchemy import bindparam, select
from sqlmodel import col

from hub.store.db import Database
from hub.store.models import Turn

# Built once (every turn asks): see runtime._CLAIM.
_RECENT = (
    select(col(Turn.role), col(Turn.text), col(Turn.person_id), col(Turn.tokens), col(Turn.author))
    .where(col(Turn.conversation) == bindparam("conversation"))
    .order_by(col(Turn.id).desc())
    .limit(bindparam("n"))
)


class RecentTurn(NamedTuple):
    role: str
    text: str
    person_id: str | None
    tokens: int
    author: str


def estimate_tokens(text: str) -> int:
    """A cheap, conservative estimate: ~4 ASCII characters a token, one token per other char.

    Exact counts depend on each model's tokenizer; the budget only needs to be safe.
    """
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    return math.ceil((len(text) - non_ascii) / 4) + non_ascii + 4


class WorkingMemory:
    def __init__(self, db: Database) -> None:
        self._db = db

    def recent(self, conversation: str, budget: int, max_turns: int) -> list[RecentTurn]:
        """The newest turns that fit the budget, at most `max_turns`, oldest first."""
        with self._db.engine.connect() as conn:
            rows = conn.execute(_RECENT, {"conversation": conversation, "n": max_turns}).all()
        kept: list[RecentTurn] = []
        used = 0
        for row in map(RecentTurn._make, rows):
            cost = row.tokens  # estimated once, when the turn was written
            if used + cost > budget:
                break
            kept.append(row)
            used += cost
        kept.reverse()
        return kept
