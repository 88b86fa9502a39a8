"""The hub's tables (DESIGN §5 hub.db). Changes here need a migration in migrations/versions."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Generic, TypeVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Dialect,
    Index,
    String,
    UniqueConstraint,
    text,
)
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

from hub.messages import DeliveryKind, DeliveryStatus, utcnow


class InboxStatus(StrEnum):
    """Where an inbox row is in its life; only hub/turns/inbox.py moves a row between them."""

    RECEIVED = "received"  # persisted, not yet claimed by a turn (or released for a retry)
    PROCESSING = "processing"  # a turn claimed it
    HELD = "held"  # routed to a paused Anima; released when it resumes
    DONE = "done"  # answered (a reply delivery was committed with it) or command run
    FAILED = "failed"  # given up on, the sender told why
    IGNORED = "ignored"  # kept, not for an Anima: from a bot, an edit, not addressed
    UNROUTED = "unrouted"  # addressed, but no Anima could take it


E = TypeVar("E", bound=StrEnum)


class StrEnumColumn(TypeDecorator[E], Generic[E]):
    """A StrEnum stored as its plain string value and read back as the enum."""

    impl = String(16)
    cache_ok = True

    def __init__(self, enum: type[E]) -> None:
        super().__init__()
        self._enum = enum

    def process_bind_param(self, value: E | str | None, dialect: Dialect) -> str | None:
        return None if value is None else self._enum(value).value

    def process_result_value(self, value: str | None, dialect: Dialect) -> E | None:
        return None if value is None else self._enum(value)


class UTCDateTime(TypeDecorator[datetime]):
    """Stored as UTC, read back aware. SQLite keeps no offset, so without this a +09:00
    time would come back nine hours off, and ordering by time would be wrong."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the hub stores aware times only")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _ts(**kw: Any) -> Any:
    return Field(default_factory=utcnow, sa_column=Column(UTCDateTime(), **kw))


def _new_list() -> list[Any]:
    return []


def _new_dict() -> dict[str, Any]:
    return {}


def _json(default: Any) -> Any:
    # Python functions, not the `list`/`dict` builtins: pydantic inspects a default factory's
    # signature on every construction, and a builtin's costs a tokenizer run (0.1 ms).
    return Field(default_factory=default, sa_column=Column(JSON, nullable=False))


class Person(SQLModel, table=True):
    __tablename__ = "person"
    id: str = Field(primary_key=True, max_length=64)
    display_name: str = Field(max_length=200)
    timezone: str = Field(default="", max_length=64)
    language: str = Field(default="", max_length=16)
    roles: list[str] = _json(_new_list)
    default_anima: str | None = Field(default=None, max_length=64)
    created_at: datetime = _ts(nullable=False)
    # When the offline mode first explained itself to this person (hub/turns/offline.py): once
    # per person, then in one line.
    offline_told_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    # Who gave the person their name (an admin's invite, `user`, the owner at first start),
    # or "" for a person made from a platform account: that name is the platform's claim,
    # which anyone can choose, so it never picks the person (hub/people/names.py).
    named_by: str = Field(default="", max_length=200, sa_column_kwargs={"server_default": ""})


class Identity(SQLModel, table=True):
    """A platform account linked to a person."""

    __tablename__ = "identity"
    platform: str = Field(primary_key=True, max_length=32)
    user_id: str = Field(primary_key=True, max_length=128)
    person_id: str = Field(foreign_key="person.id", index=True, max_length=64)
    display_name: str = Field(default="", max_length=200)
    is_bot: bool = False
    created_at: datetime = _ts(nullable=False)


class PersonAlias(SQLModel, table=True):
    """A person merged into another (`/link`, `animahub people merge`): what was kept under
    the old id (memory scoped `person:<alias>`) is now the other person's."""

    __tablename__ = "person_alias"
    alias: str = Field(primary_key=True, max_length=64)
    person_id: str = Field(foreign_key="person.id", index=True, max_length=64)
    created_at: datetime = _ts(nullable=False)


class ChannelBinding(SQLModel, table=True):
    __tablename__ = "channel_binding"
    channel_key: str = Field(primary_key=True, max_length=300)
    anima: str = Field(max_length=64)
    created_by: str = Field(default="", max_length=200)
    created_at: datetime = _ts(nullable=False)


class InboxItem(SQLModel, table=True):
    """Every inbound event, persisted before the hub acts on it."""

    __tablename__ = "inbox"
    __table_args__ = (
        # Who sent it is part of an event's identity: a web client chooses its own ids, and
        # another person's id must not find (and replay) that person's row.
        UniqueConstraint("platform", "sender_key", "event_id", name="uq_inbox_sender_event"),
        Index("ix_inbox_status", "status"),
        # One running turn per Anima and conversation, held by the database rather than by
        # one process's mailbox lanes: a second claim waits behind it (docs/scale.md).
        Index(
            "ux_inbox_one_running",
            "anima",
            "conversation",
            unique=True,
            sqlite_where=text("status = 'processing'"),
            postgresql_where=text("status = 'processing'"),
        ),
    )
    id: str = Field(primary_key=True, max_length=36)
    platform: str = Field(max_length=32)
    event_id: str = Field(max_length=200)
    address: str = Field(max_length=500)
    conversation: str = Field(max_length=500, index=True)
    channel_key: str = Field(max_length=300, index=True)
    address_kind: str = Field(max_length=16)
    sender_key: str = Field(max_length=200)
    sender_name: str = Field(default="", max_length=200)
    sender_is_bot: bool = False
    text: str
    mentions: list[str] = _json(_new_list)
    reply_to: str | None = Field(default=None, max_length=200)
    edit_of: str | None = Field(default=None, max_length=200)
    addressed: bool = True
    attachments: list[dict[str, Any]] = _json(_new_list)
    raw: dict[str, Any] = _json(_new_dict)
    status: InboxStatus = Field(
        default=InboxStatus.RECEIVED, sa_column=Column(StrEnumColumn(InboxStatus), nullable=False)
    )
    anima: str | None = Field(default=None, max_length=64)
    person_id: str | None = Field(default=None, max_length=64)
    attempts: int = 0  # failed attempts of its turn (the model was down, a bug)
    interrupted: int = 0  # times the hub stopped while its turn ran
    # When its turn's model call first failed in this spell of retries (hub/turns/retry.py):
    # the bound `runtime.model_retry_for_s` counts from it, across restarts.
    failing_since: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    error: str | None = None
    received_at: datetime = _ts(nullable=False)
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class DeliveryRow(SQLModel, table=True):
    """Every outbound message. The unique idempotency key is what stops a double send."""

    __tablename__ = "delivery"
    __table_args__ = (Index("ix_delivery_due", "status", "next_attempt_at"),)
    id: str = Field(primary_key=True, max_length=36)
    idempotency_key: str = Field(unique=True, max_length=300)
    address: str = Field(max_length=500, index=True)
    channel_key: str = Field(max_length=300, index=True)
    address_kind: str = Field(max_length=16)
    text: str
    kind: DeliveryKind = Field(sa_column=Column(StrEnumColumn(DeliveryKind), nullable=False))
    anima: str = Field(max_length=64)
    inbox_id: str | None = Field(default=None, max_length=36, index=True)
    answers: str | None = Field(default=None, max_length=200)  # the event id it answers
    reply_to: str | None = Field(default=None, max_length=200)  # that message's platform id
    status: DeliveryStatus = Field(
        default=DeliveryStatus.PENDING,
        sa_column=Column(StrEnumColumn(DeliveryStatus), nullable=False),
    )
    attempts: int = 0
    next_attempt_at: datetime = _ts(nullable=False)
    chunks: list[str] = _json(_new_list)
    message_ids: list[str] = _json(_new_list)
    error: str | None = None
    created_at: datetime = _ts(nullable=False)
    sent_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    # Set just before a chunk goes out, cleared with its id: set at start, that chunk may be
    # on the platform already (the hub stopped while sending it).
    sending_since: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class Turn(SQLModel, table=True):
    """The conversation turn log: what working memory is built from."""

    __tablename__ = "turn"
    __table_args__ = (Index("ix_turn_conversation", "conversation", "id"),)
    id: int | None = Field(default=None, primary_key=True)
    conversation: str = Field(max_length=500)
    channel_key: str = Field(max_length=300, index=True)
    anima: str = Field(max_length=64, index=True)
    role: str = Field(max_length=16)  # user | assistant
    # Indexed: the dashboard lists a person's conversations by it (hub/views/conversations.py).
    person_id: str | None = Field(default=None, max_length=64, index=True)
    author: str = Field(default="", max_length=200)
    text: str
    tokens: int = 0  # estimated once, when written; working memory sums these
    inbox_id: str | None = Field(default=None, max_length=36)
    created_at: datetime = _ts(nullable=False)


class AuditEntry(SQLModel, table=True):
    __tablename__ = "audit"
    id: int | None = Field(default=None, primary_key=True)
    at: datetime = _ts(nullable=False)
    actor: str = Field(max_length=200)
    where: str = Field(default="", max_length=500)
    action: str = Field(max_length=100)
    target: str = Field(default="", max_length=300)
    detail: dict[str, Any] = _json(_new_dict)


class AnimaState(SQLModel, table=True):
    """Run state an admin changes at runtime (`/anima pause`); absent row = running."""

    __tablename__ = "anima_state"
    name: str = Field(primary_key=True, max_length=64)
    paused: bool = False
    changed_by: str = Field(default="", max_length=200)
    changed_at: datetime = _ts(nullable=False)


class HeartbeatRun(SQLModel, table=True):
    """Each Anima's last heartbeat and what came of it (hub/schedule/heartbeat.py), for the
    dashboard:
    the log says it too, but reading logs back is not a query."""

    __tablename__ = "heartbeat_run"
    anima: str = Field(primary_key=True, max_length=64)
    at: datetime = _ts(nullable=False)
    outcome: str = ""


class ScheduleRun(SQLModel, table=True):
    """One slot of one scheduled job (hub/schedule/slots.py): claimed before it runs, so each
    (job, slot) runs once across restarts and workers; a slot skipped is a row too."""

    __tablename__ = "schedule_run"
    job_key: str = Field(primary_key=True, max_length=500)
    slot_at: datetime = _ts(primary_key=True, nullable=False, index=True)
    anima: str = Field(max_length=64, index=True)
    state: str = Field(max_length=16)  # running, done, failed, missed
    worker: str = Field(default="", max_length=100)
    attempts: int = 1
    stands_for: int = 0  # earlier slots this run stood in for (coalesced after downtime)
    note: str = ""
    started_at: datetime = _ts(nullable=False)
    finished_at: datetime | None = _ts(nullable=True)


class SessionMark(SQLModel, table=True):
    """How far each conversation's sessions have been summarized into the episode log."""

    __tablename__ = "session_mark"
    conversation: str = Field(primary_key=True, max_length=500)
    anima: str = Field(primary_key=True, max_length=64)
    last_turn_id: int = 0
    at: datetime = _ts(nullable=False)


class AdapterCursor(SQLModel, table=True):
    """A small value an adapter keeps across restarts (Telegram's update offset)."""

    __tablename__ = "adapter_cursor"
    key: str = Field(primary_key=True, max_length=200)
    value: str = Field(max_length=2000)
    updated_at: datetime = _ts(nullable=False)


class CredentialKind(StrEnum):
    API_TOKEN = "api_token"  # `animahub token create`: a person's bearer token
    SIGNIN = "signin"  # a one-time sign-in link's token
    SESSION = "session"  # the web chat's cookie, opened by a sign-in link
    LINK = "link"  # a `/link` code: whoever sends it from elsewhere is this person
    PAIRING = "pairing"  # a stranger's code, waiting for an admin's approval


class Credential(SQLModel, table=True):
    """A secret that stands for a person. Only its SHA-256 is stored: the secret itself is
    shown once (printed, in a link, in a cookie) and cannot be read back from the table."""

    __tablename__ = "credential"
    id: str = Field(primary_key=True, max_length=32)  # public: what lists show, revoke takes
    kind: CredentialKind = Field(sa_column=Column(StrEnumColumn(CredentialKind), nullable=False))
    secret_hash: str = Field(unique=True, max_length=64)
    person_id: str = Field(foreign_key="person.id", index=True, max_length=64)
    label: str = Field(default="", max_length=200)
    created_by: str = Field(default="", max_length=200)
    created_at: datetime = _ts(nullable=False)
    expires_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    used_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    revoked_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class HandoffStatus(StrEnum):
    WAITING = "waiting"  # not offered yet
    OFFERED = "offered"  # offered once, in `offered_in`: never again
    SUPERSEDED = "superseded"  # a newer one of the same person and Anima came first


class Handoff(SQLModel, table=True):
    """Where a person left off with an Anima in a DM (hub/people/handoffs.py): offered once."""

    __tablename__ = "handoff"
    __table_args__ = (UniqueConstraint("conversation", "anima", "last_turn_id"),)
    id: int | None = Field(default=None, primary_key=True)
    person_id: str = Field(foreign_key="person.id", index=True, max_length=64)
    anima: str = Field(max_length=64)
    conversation: str = Field(max_length=500)
    where: str = Field(default="", max_length=200)  # "a direct conversation on telegram"
    last_turn_id: int  # the session's last turn: one handoff per session
    discussed: str = ""
    open_questions: list[str] = _json(_new_list)
    next_steps: list[str] = _json(_new_list)
    ended_at: datetime = _ts(nullable=False)  # the session's last turn
    expires_at: datetime = _ts(nullable=False)
    status: HandoffStatus = Field(
        default=HandoffStatus.WAITING,
        sa_column=Column(StrEnumColumn(HandoffStatus), nullable=False),
    )
    offered_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    offered_in: str = Field(default="", max_length=500)


class TaskState(StrEnum):
    TODO = "todo"  # on the board, not started
    RUNNING = "running"  # the assignee is at it
    BLOCKED = "blocked"  # waiting on something outside the assignee
    REVIEW = "review"  # reported, for the manager to accept
    DONE = "done"
    FAILED = "failed"  # given up on (retries spent), escalated
    CANCELLED = "cancelled"


# on the board and not finished: what a listing of open tasks shows
OPEN_TASK_STATES = frozenset(
    {TaskState.TODO, TaskState.RUNNING, TaskState.BLOCKED, TaskState.REVIEW}
)


class Task(SQLModel, table=True):
    """A task on the board (hub/tasks/board.py): a manager Anima's work for a subordinate."""

    __tablename__ = "task"
    id: int | None = Field(default=None, primary_key=True)
    title: str = Field(max_length=200)
    details: str = ""
    manager: str = Field(max_length=64, index=True)  # who delegated it
    assignee: str = Field(max_length=64, index=True)
    requested_by: str | None = Field(default=None, max_length=64)  # the person who asked
    origin: str = Field(default="", max_length=500)  # the address the request came from
    report_to: list[str] = _json(_new_list)  # targets, as a cron's post_to
    due_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    state: TaskState = Field(
        default=TaskState.TODO, sa_column=Column(StrEnumColumn(TaskState), nullable=False)
    )
    attempts: int = 0
    depth: int = 0  # how many delegations above it
    parent_id: int | None = Field(default=None, foreign_key="task.id")
    result: str = ""  # the report
    # What asked for it (a turn and what it asked): the same request twice is one task.
    request_key: str | None = Field(default=None, max_length=300, unique=True, index=True)
    escalated_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    created_at: datetime = _ts(nullable=False)
    updated_at: datetime = _ts(nullable=False)


class TaskEvent(SQLModel, table=True):
    """One transition of a task: when, by whom, from what to what, and why."""

    __tablename__ = "task_event"
    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="task.id", index=True)
    at: datetime = _ts(nullable=False)
    actor: str = Field(max_length=200)
    from_state: str | None = Field(default=None, max_length=16)
    to_state: str = Field(max_length=16)
    note: str = ""


class LeaseRow(SQLModel, table=True):
    """A lease (hub/store/leases.py, docs/scale.md): held by `holder` until `expires_at`, on
    the database's clock; `epoch` grows each time it changes hands (a fencing token)."""

    __tablename__ = "lease"
    key: str = Field(primary_key=True, max_length=200)
    holder: str = Field(max_length=100)
    epoch: int = 0
    expires_at: datetime = _ts(nullable=False)


class OutboxClaimRow(SQLModel, table=True):
    """Which outbox sender holds an address until when (hub/delivery/claims.py): one sender
    per address keeps its deliveries in order across workers; `epoch` grows each time the
    claim is taken, so a sender that lost it cannot record progress."""

    __tablename__ = "outbox_claim"
    address: str = Field(primary_key=True, max_length=500)
    holder: str = Field(max_length=100)
    epoch: int = 0
    expires_at: datetime = _ts(nullable=False)


class VersionRow(SQLModel, table=True):
    """How many times a kind of cached state changed (hub/store/versions.py): bumped by
    triggers on the tables behind it (migration 0021), never by the hub's code."""

    __tablename__ = "hub_version"
    kind: str = Field(primary_key=True, max_length=50)
    version: int = Field(sa_column=Column(BigInteger(), nullable=False))


class WorkerRow(SQLModel, table=True):
    """A hub worker that takes leases, and when it last said it was alive."""

    __tablename__ = "hub_worker"
    id: str = Field(primary_key=True, max_length=100)
    seen_at: datetime = _ts(nullable=False)
