"""What a heartbeat looks at, and what it says when there is no model to think with.

A heartbeat observes the Anima's recent activity (conversations since the last heartbeat,
messages still waiting, failed replies), then either a model plans and reflects on it, or
the offline mode writes a factual digest. Nothing worth saying is `HEARTBEAT_OK`: nothing
is posted.

Privacy (DESIGN §7.4): a heartbeat posts to channels, so it never quotes a direct
conversation, or a channel other than its targets; those appear only as counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import func, insert, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from hub.messages import Address, AddressKind, DeliveryStatus
from hub.store.db import Database
from hub.store.models import DeliveryRow, HeartbeatRun, InboxItem, InboxStatus, Turn
from hub.turns.episodes import describe
from hub.turns.inbox import WAITING

HEARTBEAT_OK = "HEARTBEAT_OK"
_EXCERPT = 140
_OUTCOME_MAX = 500  # a heartbeat posted to many channels names them all
# How far back a heartbeat looks at most (or one interval, if longer): after weeks of
# downtime the last day is news, the rest is history. A day spans any active_hours gap.
LOOKBACK_MAX = timedelta(days=1)


@dataclass
class Conversation:
    channel_key: str
    where: str
    is_dm: bool
    messages: int = 0
    authors: list[str] = field(default_factory=list)
    last_text: str = ""


@dataclass(frozen=True, slots=True)
class Observation:
    anima: str
    since: datetime
    until: datetime
    conversations: list[Conversation]
    waiting: int  # messages to this Anima not answered yet (incl. held while paused)
    new_waiting: int  # of those, the ones received since the last heartbeat
    failed_turns: int  # messages it gave up on since the last heartbeat
    failed_deliveries: int  # its deliveries (replies, reports) that failed since the last one

    @property
    def quiet(self) -> bool:
        # Messages that were already waiting at the last heartbeat were reported then.
        return not (
            self.conversations or self.new_waiting or self.failed_turns or self.failed_deliveries
        )


def observe(db: Database, anima: str, since: datetime, until: datetime) -> Observation:
    with db.session() as session:
        turns = session.exec(
            select(Turn, InboxItem.address_kind, InboxItem.address)
            .join(InboxItem, col(InboxItem.id) == col(Turn.inbox_id))
            .where(Turn.anima == anima, Turn.role == "user")
            .where(col(Turn.created_at) > since, col(Turn.created_at) <= until)
            .order_by(col(Turn.id))
        ).all()
        waiting_since = session.exec(
            select(col(InboxItem.received_at)).where(
                InboxItem.anima == anima, col(InboxItem.status).in_(WAITING)
            )
        ).all()
        failed_turns = session.exec(
            select(func.count())
            .select_from(InboxItem)
            .where(InboxItem.anima == anima, InboxItem.status == InboxStatus.FAILED)
            .where(col(InboxItem.finished_at) > since, col(InboxItem.finished_at) <= until)
        ).one()
        failed_deliveries = session.exec(
            select(func.count())
            .select_from(DeliveryRow)
            .where(DeliveryRow.anima == anima, DeliveryRow.status == DeliveryStatus.FAILED)
            .where(col(DeliveryRow.created_at) > since, col(DeliveryRow.created_at) <= until)
        ).one()
    by_channel: dict[str, Conversation] = {}
    for turn, kind, address in turns:
        parsed = Address.parse(address, kind)
        key = turn.conversation if parsed.kind is AddressKind.DM else turn.channel_key
        conv = by_channel.setdefault(
            key, Conversation(turn.channel_key, describe(parsed), parsed.kind is AddressKind.DM)
        )
        conv.messages += 1
        if turn.author and turn.author not in conv.authors:
            conv.authors.append(turn.author)
        conv.last_text = turn.text
    return Observation(
        anima,
        since,
        until,
        list(by_channel.values()),
        len(waiting_since),
        sum(1 for received in waiting_since if received > since),
        int(failed_turns),
        int(failed_deliveries),
    )


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 1] + "…"


def facts(obs: Observation, targets: set[str], timezone: str) -> list[str]:
    """The observation as plain lines, detailed only for the target channels."""
    tz = ZoneInfo(timezone)
    since = obs.since.astimezone(tz).strftime("%Y-%m-%d %H:%M")
    lines = []
    shown = [c for c in obs.conversations if not c.is_dm and c.channel_key in targets]
    for conv in shown:
        who = ", ".join(conv.authors) or "someone"
        lines.append(
            f"- {conv.where}: {conv.messages} message(s) from {who}; "
            f"latest: “{_excerpt(conv.last_text)}”"
        )
    others = [c for c in obs.conversations if c not in shown]
    if others:
        dms = sum(1 for c in others if c.is_dm)
        count = sum(c.messages for c in others)
        lines.append(
            f"- {count} message(s) in {len(others)} other conversation(s)"
            + (f", {dms} of them direct" if dms else "")
        )
    if obs.waiting:
        lines.append(f"- {obs.waiting} message(s) still waiting for an answer")
    if obs.failed_turns:
        lines.append(f"- {obs.failed_turns} message(s) I could not answer")
    if obs.failed_deliveries:
        # Replies, reports and posts alike: every delivery of this Anima's that failed.
        lines.append(f"- {obs.failed_deliveries} message(s) of mine that could not be delivered")
    return [f"Since {since} ({timezone}):", *lines] if lines else []


def digest(obs: Observation, targets: set[str], timezone: str) -> str:
    """The offline heartbeat: a factual digest, or HEARTBEAT_OK when nothing happened."""
    if obs.quiet:
        return HEARTBEAT_OK
    return "\n".join([f"**Heartbeat of {obs.anima}**", *facts(obs, targets, timezone)])


def prompt(obs: Observation, targets: set[str], timezone: str) -> str:
    """The task a model gets for a heartbeat: observe, plan, reflect."""
    seen = facts(obs, targets, timezone) or ["Nothing happened since the last heartbeat."]
    return "\n".join(
        [
            "This is your heartbeat: a moment to look at what has been going on, plan, and "
            "reflect. What you write is posted to your team's channel.",
            "",
            *seen,
            "",
            "If something needs attention (an unanswered question, a failure, a follow-up you "
            "promised), write a short note to the team about it and what you will do. "
            f"If nothing is worth saying, answer exactly {HEARTBEAT_OK} and nothing else.",
        ]
    )


def is_ok(text: str) -> bool:
    return text.strip().strip("`*_ ").upper().startswith(HEARTBEAT_OK)


def in_active_hours(spec: str, moment: datetime, timezone: str) -> bool:
    """`"09:00-18:00"` in the Anima's timezone; empty means always. Wraps past midnight."""
    if not spec:
        return True
    start_s, _, end_s = spec.partition("-")
    local = moment.astimezone(ZoneInfo(timezone))
    minutes = local.hour * 60 + local.minute
    start, end = _minutes(start_s), _minutes(end_s)
    if start <= end:
        return start <= minutes < end
    return minutes >= start or minutes < end


def _minutes(text: str) -> int:
    hours, _, mins = text.strip().partition(":")
    return int(hours) * 60 + int(mins or 0)


# the last run ------------------------------------------------------------------------


def since(last: datetime | None, at: datetime, interval: timedelta) -> datetime:
    """Where a heartbeat at `at` starts looking: the previous heartbeat (`last`), never
    further back than LOOKBACK_MAX or one interval, if longer; as far as that for a first
    heartbeat. (One interval back, a first heartbeat that ran late, after the hub was down,
    missed what it was told just before: `at` can be most of an interval after it.)"""
    furthest = at - max(interval, LOOKBACK_MAX)
    return furthest if last is None else max(min(last, at), furthest)


def last_run_at(db: Database, anima: str) -> datetime | None:
    """When `anima`'s last heartbeat looked up to, if it ever ran."""
    with db.engine.connect() as conn:
        return conn.execute(
            select(col(HeartbeatRun.at)).where(col(HeartbeatRun.anima) == anima)
        ).scalar_one_or_none()


def record_run(db: Database, anima: str, at: datetime, outcome: str) -> None:
    """Keep `anima`'s last heartbeat: the moment it looked up to, which the next one starts
    from, and its outcome line (one row each)."""
    values = {"at": at, "outcome": outcome[:_OUTCOME_MAX]}
    with db.write() as conn:
        changed = conn.execute(
            update(HeartbeatRun).where(col(HeartbeatRun.anima) == anima).values(**values)
        ).rowcount
    if changed:
        return
    try:
        with db.write() as conn:
            conn.execute(insert(HeartbeatRun).values(anima=anima, **values))
    except IntegrityError:
        pass  # a heartbeat run at the same moment (`/anima heartbeat`) wrote it first


def last_runs(db: Database) -> dict[str, tuple[datetime, str]]:
    """Every Anima's last heartbeat that ran: when, and its outcome line."""
    with db.engine.connect() as conn:
        rows = conn.execute(
            select(col(HeartbeatRun.anima), col(HeartbeatRun.at), col(HeartbeatRun.outcome))
        ).all()
    return {anima: (at, outcome) for anima, at, outcome in rows}
