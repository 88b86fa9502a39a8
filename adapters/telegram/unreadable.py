"""Updates python-telegram-bot cannot read, found one by one so polling goes past them.

PTB parses a whole `getUpdates` batch at once (`Update.de_list`): one update it cannot read
(a date past the year 9999, a field of the wrong type) made every poll raise, and polling
stalled for everyone. The batch is not confirmed until the offset moves, so it is fetched
again raw, over the same Bot API, and each update read on its own: one that cannot be read
is kept as failed (`HubPort.update_failed`) and skipped in its place in the order.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from telegram import Bot, Update

from adapters.telegram.shape import update_problem

# What PTB's parser raises for an object it cannot turn into an Update.
UNREADABLE = (TypeError, ValueError, KeyError, AttributeError, OverflowError, OSError)


@dataclass(frozen=True, slots=True)
class Unreadable:
    update_id: int
    error: BaseException
    raw: object


async def fetch_one_by_one(
    bot: Bot, offset: int | None, allowed: list[str]
) -> list[Update | Unreadable]:
    """The batch from `offset` on, each update read on its own (a short poll: they are
    waiting already)."""
    body: dict[str, object] = {"timeout": 0, "allowed_updates": allowed}
    if offset is not None:
        body["offset"] = offset
    async with httpx.AsyncClient(timeout=30) as client:
        answer = await client.post(f"{bot.base_url}/getUpdates", json=body)
    answer.raise_for_status()
    result = answer.json().get("result")
    found: list[Update | Unreadable] = []
    for raw in result if isinstance(result, list) else []:
        update_id = raw.get("update_id") if isinstance(raw, dict) else None
        if not isinstance(update_id, int):
            continue  # Telegram numbers every update; nothing to confirm past without one
        try:
            problem = update_problem(raw)
            if problem is not None:
                raise ValueError(problem)
            found.append(Update.de_json(raw, bot))
        except UNREADABLE as exc:
            found.append(Unreadable(update_id, exc, raw))
    return found
