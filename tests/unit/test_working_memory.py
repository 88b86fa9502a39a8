"""Working memory: the newest turns within a token budget and a turn count."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert

from hub.memory.working import WorkingMemory, estimate_tokens
from hub.store.db import Database
from hub.store.models import Turn


def add_turns(db: Database, conversation: str, texts: list[str]) -> None:
    rows = [
        {
            "conversation": conversation,
            "channel_key": "web:local/general",
            "anima": "aria",
            "role": "user" if n % 2 == 0 else "assistant",
            "author": "alice" if n % 2 == 0 else "aria",
            "text": text,
            "tokens": estimate_tokens(text),
            "created_at": datetime(2026, 11, 1, tzinfo=UTC),
        }
        for n, text in enumerate(texts)
    ]
    with db.write() as conn:
        conn.execute(insert(Turn), rows)


def test_newest_turns_within_the_budget_and_the_turn_cap(db: Database) -> None:
    add_turns(db, "c1", [f"turn {n}" for n in range(30)])
    add_turns(db, "c2", ["another conversation"])
    memory = WorkingMemory(db)

    capped = memory.recent("c1", budget=10_000, max_turns=8)
    assert [t.text for t in capped] == [f"turn {n}" for n in range(22, 30)]  # oldest first

    per_turn = estimate_tokens("turn 29")
    by_budget = memory.recent("c1", budget=per_turn * 3, max_turns=50)
    assert [t.text for t in by_budget] == ["turn 27", "turn 28", "turn 29"]

    assert [t.text for t in memory.recent("c2", 10_000, 50)] == ["another conversation"]
    assert memory.recent("nobody", 10_000, 50) == []
