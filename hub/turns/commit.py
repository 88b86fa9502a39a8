"""A turn's results committed in one transaction: the two turn-log rows, the reply delivery,
the inbox row marked done, the handoff it was offered used up, the offline mode told.

Then the episode is recorded in memory (after the commit: hub/turns/episodes.py says why) and
the turn's stream told it is done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, update
from sqlmodel import col

from hub.adapter import TurnEvent
from hub.memory.working import estimate_tokens
from hub.messages import DeliveryKind
from hub.people.handoffs import Handoffs, Offer
from hub.redaction.redact import redact
from hub.store.models import InboxStatus, Person, Turn
from hub.turns.episodes import Answered, record
from hub.turns.inbox import Claimed
from hub.turns.mailbox import TurnJob
from hub.turns.parts import TurnParts


@dataclass(frozen=True, slots=True)
class Answer:
    """`reply`: what is sent; `remembered`: what the episode keeps of it; `offer`: the handoff
    the turn was offered (used up with this commit); `told_offline`: whether the reply
    explained the offline mode to its person (then never again)."""

    reply: str
    remembered: str
    offer: Offer | None = None
    told_offline: bool = False


class TurnCommit:
    def __init__(self, parts: TurnParts, now: Callable[[], datetime]) -> None:
        self._parts = parts
        self._now = now  # the hub's clock: the turn log and the episode are dated by it

    def finish(self, row: Claimed, job: TurnJob, answer: Answer) -> None:
        """Commit the turn. The turn log keeps both sides redacted: it outlives the turn
        (working memory, summaries)."""
        said, remembered = redact(row.text)[0], redact(answer.remembered)[0]
        at = self._now()  # the turn log's and the episode's (a replay finds it by this)
        parts = self._parts
        with parts.db.write() as conn:
            # First: refused (Fenced) if another worker has taken the Anima over since.
            parts.ownership.guard(conn, job.anima)
            conn.execute(_INSERT_TURN, _turn_rows(row, job, said, remembered, at))
            parts.outbox.enqueue(
                conn,
                row.address,
                answer.reply,
                DeliveryKind.REPLY,
                job.anima,
                f"reply:{row.id}",
                inbox_id=row.id,
                answers=row.event_id,
                reply_to=row.reply_to,
            )
            parts.inbox.close(conn, row.id, InboxStatus.DONE, text=row.text)
            if answer.offer is not None:
                Handoffs.offered(conn, answer.offer, row.conversation, at)
            if answer.told_offline and row.person_id:
                conn.execute(
                    update(Person)
                    .where(col(Person.id) == row.person_id, col(Person.offline_told_at).is_(None))
                    .values(offline_told_at=at)
                )
        if parts.memory is not None:  # after the commit: hub/turns/episodes.py says why
            record(
                parts.memory,
                Answered(
                    job.anima,
                    row.id,
                    row.person_id,
                    row.sender_name or row.sender_key,
                    row.address,
                    row.channel_key,
                    row.text,
                    remembered,
                    at,
                ),
            )
        parts.events.publish(job.inbox_id, TurnEvent("done", anima=job.anima))


def _turn_rows(
    row: Claimed, job: TurnJob, said: str, remembered: str, at: datetime
) -> list[dict[str, object]]:
    """The turn log's two rows: what the person said and what the Anima answered."""
    common = {
        "conversation": row.conversation,
        "channel_key": row.channel_key,
        "anima": job.anima,
        "inbox_id": row.id,
        "created_at": at,
    }
    return [
        {
            **common,
            "role": "user",
            "person_id": row.person_id,
            "author": row.sender_name or row.sender_key,
            "text": said,
            "tokens": estimate_tokens(said),
        },
        {
            **common,
            "role": "assistant",
            "person_id": None,
            "author": job.anima,
            # What the conversation keeps of the reply: an offline answer is a template (it
            # restates the conversation), so working memory and session summaries keep only
            # the note that it was answered offline.
            "text": remembered,
            "tokens": estimate_tokens(remembered),
        },
    ]


# Built once: building the statement costs more than running it (bench/README.md).
_INSERT_TURN = insert(Turn)
