"""What a turn does when its model call fails: tried again later, or given up and explained.

The failure's kind (hub/model/failure.py) decides:

- **A failure a retry can mend** (unreachable, timing out, rate limited, a 5xx, a bug): the
  inbox row goes back to `received` with one more attempt, and the turn runs again after a
  backoff (`[runtime] model_retry_base_s`, doubling up to `model_retry_max_s`, or longer if
  the provider's Retry-After asks), *in its conversation's lane*: the runtime hands the delay
  to the mailbox (hub/turns/mailbox.py), which holds the lane, so the conversation's later messages
  wait behind it and order holds. The person is told once, on the first failure of the
  spell, in plain words, that the answer is delayed: a notice delivered on their platform
  (its idempotency key `delayed:<row>` makes it one even across restarts) and a `delayed`
  live event in the web chat. The spell is bounded by `model_retry_for_s` since its first
  failure (`inbox.failing_since`, so a restart does not reset it) and `max_turn_attempts`.
- **A crash** (the turn raised anything else, anywhere: hub/turns/mailbox.py hands it here) is a
  failure of kind `internal`: retried and given up on the same way, once its row is open.
- **Past the bound**, or **a failure no retry can mend** (key refused, model unknown,
  content refused, bad request): the row is closed `failed`, the person gets one plain
  notice, and the operator the kind, the provider's words and the fix, in the log line and
  the row's `error` (`GET /api/inbox?status=failed`, the dashboard).

The person never sees litellm's own text: providers' errors are for the operator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import col, func, select

from hub.adapter import TurnEvent
from hub.messages import DeliveryKind
from hub.model.client import LLMError
from hub.settings import RuntimeSection
from hub.store.db import Database
from hub.store.models import InboxItem, InboxStatus
from hub.turns.inbox import Claimed
from hub.turns.mailbox import TurnJob
from hub.turns.parts import TurnParts

log = logging.getLogger("hub.turns.runtime")

Tell = Callable[..., None]  # Runtime._tell: a notice on the live feed


def span(seconds: float) -> str:
    """A duration in words a person reads: "45 seconds", "10 minutes"."""
    if seconds < 90:
        whole = max(1, round(seconds))
        return f"{whole} second{'s' if whole != 1 else ''}"
    minutes = round(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def backoff(limits: RuntimeSection, failed: int, retry_after: float | None) -> float:
    """How long to wait before attempt `failed + 1`: doubling from the base up to the cap,
    never sooner than the provider asked."""
    delay = min(limits.model_retry_max_s, limits.model_retry_base_s * 2.0 ** (failed - 1))
    return max(delay, retry_after or 0.0)


def delayed_notice(limits: RuntimeSection, exc: LLMError) -> str:
    return (
        f"Your answer is delayed. {exc.kind.for_person} I will keep trying for up to "
        f"{span(limits.model_retry_for_s)} and answer here as soon as it works."
    )


class TurnFailures:
    """Decides and records what a failed turn does next; see the module's docstring."""

    def __init__(self, parts: TurnParts, tell: Tell, now: Callable[[], datetime]) -> None:
        self._db = parts.db
        self._limits = parts.settings.runtime
        self._inbox = parts.inbox
        self._outbox = parts.outbox
        self._events = parts.events
        self._tell = tell
        self._now = now
        self._guard = parts.ownership.guard  # a worker that lost the Anima records nothing

    def model_failed(self, row: Claimed, job: TurnJob, exc: LLMError) -> float | None:
        """Record the failed attempt; the delay before the next one, or None: given up."""
        kind = exc.kind
        if not exc.retryable:
            self.give_up(
                row,
                job,
                f"Sorry, I cannot answer your message. {kind.for_person}",
                f"{kind.value}: {exc} (fix: {kind.fix})",
            )
            return None
        now = self._now()
        since = row.failing_since or now
        failed = row.attempts + 1  # this attempt included
        tried = (now - since).total_seconds()
        left = self._limits.model_retry_for_s - tried
        if left <= 0 or failed >= self._limits.max_turn_attempts:
            self.give_up(
                row,
                job,
                f"Sorry, I could not answer your message. {kind.for_person} I kept trying for "
                f"{span(max(tried, 1.0))}; please send it again later.",
                f"{kind.value}: gave up after {failed} attempts over {tried:.0f} s: {exc} "
                f"(fix: {kind.fix})",
            )
            return None
        # The last attempt is made at the bound, not past it.
        delay = min(backoff(self._limits, failed, exc.retry_after), left)
        first = row.failing_since is None
        notice = delayed_notice(self._limits, exc)
        with self._db.write() as conn:
            self._guard(conn, job.anima)
            self._inbox.release(conn, row.id, f"{kind.value} (attempt {failed}): {exc}", since)
            if first:  # told once a spell: the key makes it once across restarts too
                self._outbox.enqueue(
                    conn,
                    row.address,
                    notice,
                    DeliveryKind.NOTICE,
                    job.anima,
                    f"delayed:{row.id}",
                    inbox_id=row.id,
                    answers=row.event_id,
                    reply_to=row.reply_to,
                )
        log.warning(
            "turn %s: the model call failed (%s: %s); attempt %d, trying again in %.1f s (fix: %s)",
            row.id,
            kind.value,
            exc,
            failed,
            delay,
            kind.fix,
            extra={"anima": job.anima},
        )
        # Every failed attempt: the web chat drops the text it was shown of this attempt; the
        # words of the notice only the first time.
        self._events.publish(job.inbox_id, TurnEvent("delayed", notice if first else "", job.anima))
        self._tell(row, job, "delayed", error=kind.value, retry_in_s=round(delay, 1))
        return delay

    def crashed(self, job: TurnJob, exc: Exception) -> float | None:
        """A turn raised what nobody expected (a bug of ours, wherever in the turn): retried
        and given up on like a model failure of kind `internal`, so its message is answered
        once or explained once. None when its row is not open any more: the crash came after
        the reply's commit (answered) or after it was given up on or held."""
        row = self._inbox.still_open(job.inbox_id)
        if row is None:
            return None
        return self.model_failed(row, job, LLMError(f"internal error: {exc!r}"))

    def give_up(self, row: Claimed, job: TurnJob, notice: str, error: str) -> None:
        """Tell the sender `notice`, record `error` for the operator, and stop trying."""
        with self._db.write() as conn:
            self._guard(conn, job.anima)
            self._outbox.enqueue(
                conn,
                row.address,
                notice,
                DeliveryKind.NOTICE,
                job.anima,
                f"notice:{row.id}",
                inbox_id=row.id,
                answers=row.event_id,
                reply_to=row.reply_to,
            )
            self._inbox.close(conn, row.id, InboxStatus.FAILED, text=row.text, error=error)
        log.error("turn %s not answered: %s", row.id, error, extra={"anima": job.anima})
        self._events.publish(job.inbox_id, TurnEvent("error", notice, job.anima))
        self._tell(row, job, "failed", error=error)


SHOWN_FOR = timedelta(days=1)  # how long health and `animahub status` name failed turns


def recent_failures(db: Database, now: datetime) -> dict[str, Any]:
    """Messages given up on in the last day, and the latest's Anima and error: the kind, the
    provider's words and the fix, for the operator (`/api/system/health` `failed_turns`,
    `animahub status`)."""
    since = now - SHOWN_FOR
    with db.session() as session:
        query = select(InboxItem).where(
            col(InboxItem.status) == InboxStatus.FAILED, col(InboxItem.finished_at) >= since
        )
        count = session.exec(select(func.count()).select_from(query.subquery())).one()
        latest = session.exec(query.order_by(col(InboxItem.finished_at).desc()).limit(1)).first()
    if latest is None:
        return {"count": 0, "latest": None}
    at = latest.finished_at.isoformat() if latest.finished_at else None
    return {
        "count": count,
        "latest": {"anima": latest.anima, "at": at, "error": latest.error or ""},
    }
