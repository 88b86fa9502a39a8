"""Runs an Anima's turn: working memory -> model (or offline mode) -> turn log + outbox.

A turn's results (the two turn-log rows, the reply delivery, the inbox row marked done) are
committed in one transaction. A crash before it leaves the inbox row unfinished, and
recovery runs the turn again; a crash after it leaves a pending delivery the outbox sends.
Either way the message is answered once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlmodel import col

from hub.adapter import TurnEvent
from hub.animas import Anima
from hub.live import LiveFeed
from hub.memory.recall import RecallScope
from hub.memory.working import WorkingMemory
from hub.messages import AddressKind, utcnow, with_attachments
from hub.model.client import LLMError, Usage
from hub.model.tool_registry import ToolContext
from hub.people.handoffs import Offer
from hub.people.identity import PersonView
from hub.redaction.redact import StreamRedactor
from hub.store.models import Person
from hub.store.ownership import Fenced
from hub.supervise import Backoff, Part
from hub.turns.assigned import assign
from hub.turns.commit import Answer, TurnCommit
from hub.turns.context import TurnContexts
from hub.turns.episodes import OFFLINE_NOTE, describe
from hub.turns.inbox import Claimed, ConversationBusy
from hub.turns.llm import TurnContext, spent, wrap_message
from hub.turns.mailbox import Job, Mailboxes, TaskJob, TurnJob
from hub.turns.parts import Holds, Responders, TurnParts
from hub.turns.retry import TurnFailures

# Responders and TurnParts are what the composition root and tests build a runtime from.
__all__ = ["WAITING", "Responders", "Runtime", "TurnParts"]

log = logging.getLogger(__name__)
WAITING = "Still waiting for the AI model to answer…"
# How often a turn whose conversation is busy on another worker asks again (docs/scale.md).
BUSY_WAIT_S = 0.5


class Runtime:
    def __init__(
        self,
        parts: TurnParts,
        *,
        hold: Holds | None = None,
        now: Callable[[], datetime] = utcnow,
        health: Part | None = None,
        live: LiveFeed | None = None,
    ) -> None:
        self._parts = parts
        self._db = parts.db
        self._live = live or LiveFeed()  # the dashboard's feed: a turn began, ended
        self._settings = parts.settings
        self._animas = parts.animas
        self._identity = parts.identity
        self._responders = parts.responders
        self._events = parts.events
        self._working = WorkingMemory(parts.db)
        self._contexts = TurnContexts(parts.settings, parts.animas.roles, parts.memory)
        self._handoffs = parts.handoffs
        self._telling: set[str] = set()  # people a running turn explains offline mode to
        self._hold = hold
        self._now = now  # the hub's clock: turns and episodes are dated by it
        self._commit = TurnCommit(parts, now)
        self.mailboxes = Mailboxes(self._handle, self._crashed)
        self._health = health or Part("turns", now)
        self._db_backoff = Backoff(base_s=1.0, max_s=30.0)
        self._failures = TurnFailures(parts, self._tell, now)
        # Runs a delegated task in the assignee's mailbox (hub/tasks/runner.py, set by app).
        self.run_task: Callable[[TaskJob], Awaitable[None]] | None = None

    def expect(self, inbox_id: str) -> None:
        """Buffer a routed turn's events from now, before pacing lets it run: whoever asks for
        the reply of a message still waiting for its slot then waits for it, not told to
        look again later (the CLI had no later)."""
        self._events.open(inbox_id)

    def submit(self, job: Job) -> None:
        ownership = self._parts.ownership
        if not ownership.holds(job.anima):
            # Another worker runs this Anima (docs/scale.md): a turn's row is assigned to it
            # and it is told; a task's run is started by the holder's own sweep.
            if isinstance(job, TurnJob):
                assign(self._db, job)
            return
        if ownership.shared and isinstance(job, TurnJob):
            # Named before it waits in a lane here: if this worker stops or loses the Anima
            # first, the next holder's sweep finds the row (it looks only at named ones).
            assign(self._db, job, tell=False)
        if isinstance(job, TurnJob):
            self._events.open(job.inbox_id)
        anima = self._animas.get(job.anima)
        limit = anima.spec.limits.max_concurrent_turns if anima else 1
        self.mailboxes.put(job, min(limit, self._settings.runtime.max_concurrent_turns))

    async def _handle(self, job: Job) -> float | None:
        if isinstance(job, TurnJob):
            return await self.handle(job)
        if self.run_task is not None:
            await self.run_task(job)
        return None

    def _crashed(self, job: Job, exc: Exception) -> float | None:
        """A job raised (a bug): `turns` fails in health until a turn works again, and the
        turn is retried within its bound, then given up on and explained (hub/turns/retry.py).
        A task's run is started again by the task runner's sweep."""
        failures = self._health.failing(f"{job.inbox_id} crashed: {type(exc).__name__}: {exc}")
        if isinstance(job, TaskJob):
            return None
        try:
            return self._failures.crashed(job, exc)
        except Fenced:
            return None  # another worker holds the Anima now, and runs the turn
        except DBAPIError as db_exc:  # its row cannot be read: the turn is run again later
            log.error("turn %s: the database failed (%s)", job.inbox_id, db_exc.orig)
            return self._db_backoff.delay(failures)

    async def handle(self, job: TurnJob) -> float | None:
        """Run one turn; the seconds after which its lane runs it again, or None when it is
        finished (answered, given up, held). If the database fails under it, the inbox row is
        still open (the reply is committed with the row's close, or not at all), so the turn
        is simply run again once the database is back: nothing lost, nothing doubled."""
        try:
            again = await self._turn(job)
        except Fenced as exc:
            # Another worker holds the Anima now (this one was stopped or cut off past its
            # lease): nothing of this turn was written, and the new holder runs it.
            log.warning("turn %s left to its new holder: %s", job.inbox_id, exc)
            return None
        except DBAPIError as exc:
            failures = self._health.failing(f"the database failed a turn: {exc.orig}")
            delay = self._db_backoff.delay(failures)
            log.error(
                "turn %s: the database failed (%s); trying again in %.1f s",
                job.inbox_id,
                exc.orig,
                delay,
                extra={"anima": job.anima},
            )
            self._events.publish(
                job.inbox_id,
                TurnEvent(
                    "error",
                    "The hub cannot reach its database right now. Your message is kept and "
                    "will be answered in this conversation.",
                    job.anima,
                ),
            )
            return delay  # run again in its lane: the conversation's later messages wait
        self._health.ok()
        return again

    async def _turn(self, job: TurnJob) -> float | None:
        if self._held(job):
            return None
        try:
            row = self._parts.inbox.claim(job, self._parts.ownership.guard)
        except ConversationBusy:
            # Behind the running turn, in its lane: never refused as busy.
            log.debug("turn %s waits: a turn of its conversation is running", job.inbox_id)
            return BUSY_WAIT_S
        if row is None:
            return None
        began = time.monotonic()
        self._tell(row, job, "started")
        if row.attachments:  # described, never fetched: the turn and its memory say so
            row = row._replace(text=with_attachments(row.text, row.attachments))
        anima = self._animas.get(job.anima)
        if anima is None:
            return self._give_up(row, job, f"the Anima {job.anima!r} no longer exists")
        if (reason := self._past_limits(row)) is not None:
            return self._give_up(row, job, reason)
        person = self._identity.by_id(row.person_id or "")
        ctx, offer = await self._prepared(anima, person, row)
        try:
            reply, used = await self._stream(row, job, ctx)
        except LLMError as exc:
            self._telling.discard(person.id)
            return self._failures.model_failed(row, job, exc)
        told = not ctx.model and ctx.offline_intro  # said once per person, with this commit
        try:
            answer = Answer(reply, reply if ctx.model else OFFLINE_NOTE, offer, bool(told))
            self._commit.finish(row, job, answer)
        finally:
            self._telling.discard(person.id)  # told with the commit, or not: ask the row again
        self._tell(row, job, "done", seconds=round(time.monotonic() - began, 3))
        log.info(  # in words a person reads: who, where, how long, the model, what was recalled
            "answered %s in %s in %.1f s (%s; turn %s)",
            person.display_name,
            ctx.where,
            time.monotonic() - began,
            spent(ctx.model, used, len(ctx.recalled_lines)),
            row.id,
            extra={"anima": job.anima},
        )
        return None

    def _held(self, job: TurnJob) -> bool:
        """Whether the turn's Anima is paused: its sender is told so (hub/commands/state.py)."""
        notice = self._hold.hold(job) if self._hold is not None else None
        if notice is not None:
            self._events.publish(job.inbox_id, TurnEvent("error", notice, job.anima))
        return notice is not None

    def _past_limits(self, row: Claimed) -> str | None:
        """Why a turn is given up on before it runs again, or None."""
        limits = self._settings.runtime
        if row.attempts >= limits.max_turn_attempts:  # the limit was lowered meanwhile
            return f"the turn failed {row.attempts} times"
        if row.interrupted > limits.max_turn_interruptions:
            return f"the hub stopped during this turn {row.interrupted} times"
        return None

    async def _prepared(
        self, anima: Anima, person: PersonView, row: Claimed
    ) -> tuple[TurnContext, Offer | None]:
        """What the turn is thought in, and the handoff it is offered (used up with its commit)."""
        ctx = self._context(anima, person, row)
        ctx = await self._contexts.recalled(ctx, RecallScope.of(ctx.tools))
        offer = self._offer(row, person, anima.name)
        if offer is not None:
            ctx = replace(ctx, handoff=tuple(offer.lines()))
        if not ctx.model:
            ctx = replace(ctx, offline_intro=self._first_offline(person.id))
        return ctx, offer

    async def _stream(self, row: Claimed, job: TurnJob, ctx: TurnContext) -> tuple[str, Usage]:
        """The reply, streamed to the sender as it comes, and what it spent. Anything the
        responder raises besides a model failure (a bug, an unexpected SDK error) is raised
        as one: the sender still hears about it, and the turn is retried like a model outage,
        then given up visibly."""
        responder = self._responders.model if ctx.model else self._responders.offline
        pieces: list[str] = []
        used = Usage()
        # Streamed to the sender as it comes, never with a secret in it (hub/redaction/redact.py).
        shown = StreamRedactor()
        # A model slow to start is said to be waited for (the web chat shows it), not left
        # as a blank "replying…" until the deadline (hub/model/deadlines.py) cuts it off.
        waiting = asyncio.get_running_loop().call_later(
            self._settings.llm.waiting_notice_s, self._waiting, row, job
        )
        try:
            async for piece in responder.stream(ctx):
                waiting.cancel()
                if isinstance(piece, Usage):
                    used += piece
                    continue
                pieces.append(piece)
                self._show(job, shown.feed(piece))
            self._show(job, shown.rest())
        except LLMError:
            raise
        except Exception as exc:
            log.exception("turn %s crashed", row.id, extra={"anima": job.anima})
            raise LLMError(f"internal error: {exc!r}") from exc
        finally:
            waiting.cancel()
        return "".join(pieces).strip() or "_(the model gave an empty answer)_", used

    def _tell(self, row: Claimed, job: TurnJob, state: str, **more: object) -> None:
        """A notice on the live feed, for the sender (and admins) only."""
        self._live.publish(
            "turn",
            (row.person_id,) if row.person_id else (),
            state=state,
            anima=job.anima,
            conversation=row.conversation,
            inbox_id=row.id,
            **more,
        )

    def _waiting(self, row: Claimed, job: TurnJob) -> None:
        """No first token yet, `[llm] waiting_notice_s` into the call: say so."""
        self._events.publish(job.inbox_id, TurnEvent("waiting", WAITING, job.anima))
        self._tell(row, job, "waiting")

    def _show(self, job: TurnJob, text: str) -> None:
        if text:
            self._events.publish(job.inbox_id, TurnEvent("text", text, job.anima))

    def _first_offline(self, person_id: str) -> bool:
        """Whether this turn explains the offline mode to its person: never told before, and
        no turn of theirs in another conversation (those run in parallel) is telling them now.
        The telling is recorded with that turn's commit."""
        if person_id in self._telling or self._told_offline(person_id):
            return False
        self._telling.add(person_id)
        return True

    def _told_offline(self, person_id: str) -> bool:
        """Whether the offline mode has explained itself to this person before."""
        with self._db.engine.connect() as conn:
            told = conn.execute(
                select(col(Person.offline_told_at)).where(col(Person.id) == person_id)
            ).scalar()
        return told is not None

    def _offer(self, row: Claimed, person: PersonView, anima: str) -> Offer | None:
        """Where the person left off, in a DM only: a channel neither sees nor uses it up."""
        if self._handoffs is None or row.address.kind is not AddressKind.DM:
            return None
        return self._handoffs.offer(person.id, anima, row.conversation, self._now())

    def _context(self, anima: Anima, person: PersonView, row: Claimed) -> TurnContext:
        budget = (
            anima.spec.limits.history_token_budget or self._settings.runtime.history_token_budget
        )
        turns = self._working.recent(
            row.conversation, budget, self._settings.runtime.history_max_turns
        )
        return self._contexts.build(
            anima,
            person,
            describe(row.address),
            row.text,
            ToolContext(
                anima=anima.name,
                person_id=person.id,
                person_is_admin=person.is_admin,
                conversation=row.conversation,
                timezone=self._contexts.timezone(anima),
                channel_key=row.channel_key,
                is_dm=row.address.kind is AddressKind.DM,
                turn=row.id,
            ),
            # What people said earlier is labelled like the message itself (tests/privacy).
            history=[
                {"role": t.role, "content": wrap_message(t.author, t.text)}
                if t.role == "user"
                else {"role": t.role, "content": t.text}
                for t in turns
            ],
            earlier_from_person=[
                t.text for t in turns if t.role == "user" and t.person_id == person.id
            ],
        )

    def _give_up(self, row: Claimed, job: TurnJob, reason: str) -> float | None:
        """Tell the sender plainly, record why, and stop trying (no model failure: the hub's
        own reasons, in words). None: the turn is finished."""
        notice = f"Sorry, I could not answer your message: {reason}."
        self._failures.give_up(row, job, notice, reason)
        return None
