"""Each Anima's life on the schedule: which jobs it has, and what each run does.

Jobs per Anima: its heartbeat (anima.toml [heartbeat]), each section of its crons/*.md, and,
with memory on, daily/weekly/monthly consolidation at midnight, Sunday and the first of the
month in its timezone. `hub/schedule/scheduler.py` decides when a job runs; this module runs it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger
from sqlalchemy.exc import IntegrityError

from hub.animas import Anima, AnimaRegistry, effective_model, effective_timezone
from hub.clock import Clock
from hub.delivery.outbox import Outbox
from hub.delivery.targets import Post, Resolved, TargetResolver, groups, post_to, scope_of
from hub.live import LiveFeed
from hub.logs import one_line
from hub.messages import Address, Command, DeliveryKind
from hub.model.client import LLMError, Usage
from hub.model.gate import LocalGate, ModelCallGate, paced
from hub.schedule import heartbeat as hb
from hub.schedule.crons import CronBook, CronJob
from hub.schedule.scheduler import Fire, JobKind, JobSpec
from hub.schedule.spread import heartbeat_trigger, offsets
from hub.settings import Settings
from hub.store.db import Database
from hub.turns.llm import spent
from hub.turns.runtime import Responders
from hub.turns.thinking import Thinker, Thought

if TYPE_CHECKING:
    from hub.memory.consolidation import Consolidator
    from hub.memory.service import MemoryService

log = logging.getLogger(__name__)
CRON_GRACE = timedelta(hours=1)
# Scheduled model calls start at most this many times the heartbeats' planned mean a
# second, and at least PACED_AT_LEAST a second: posts stay under twice the mean (a start's
# post can slip into the next second), and a backlog drains at half the mean besides.
PACE_OVER_MEAN = 1.5
PACED_AT_LEAST = 2.0
CommandRunner = Callable[[str, Command, Address | None], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run did, in one line for logs, the CLI and `/anima heartbeat`."""

    anima: str
    what: str
    posted: tuple[str, ...] = ()
    text: str = ""
    failed: tuple[str, ...] = ()  # targets it could not post to, with the reason
    effort: str = ""  # what its model calls took, in words (hub/turns/llm.py `spent`)

    def line(self) -> str:
        return f"{self.anima}: {self.said()}"

    def said(self) -> str:
        """The line without the Anima's name (the dashboard shows it beside the name)."""
        where = f" to {', '.join(self.posted)}" if self.posted else ""
        missed = f"; not delivered to {', '.join(self.failed)}" if self.failed else ""
        return f"{self.what}{where}{missed}"

    def logged(self, seconds: float) -> str:
        """The log's line: what it did, how long it took, what its model calls took."""
        effort = f" ({self.effort})" if self.effort else ""
        return f"{self.said()} in {seconds:.1f} s{effort}"


def _effort(model: str, thoughts: list[Thought]) -> str:
    """What a run's model calls took, or that it made none."""
    if not model:
        return "offline mode"
    if not thoughts:
        return "no model call"
    used = sum((t.usage for t in thoughts), Usage())
    return spent(model, used, sum(len(t.recalled) for t in thoughts))


@dataclass(frozen=True, slots=True, kw_only=True)
class AgendaParts:
    """What the agenda is handed by the composition root: where a run reads and posts,
    and the roles it asks of parts above it (`paused`: hub/commands/state.py; `run_command`:
    a cron's command, hub/commands/cron.py). `gate`: the cap on scheduled model calls (a
    local one by `[scheduler]` when not given)."""

    db: Database
    settings: Settings
    animas: AnimaRegistry
    responders: Responders
    outbox: Outbox
    clock: Clock
    live: LiveFeed
    paused: Callable[[str], bool]
    run_command: CommandRunner
    memory: MemoryService | None = None
    consolidator: Consolidator | None = None
    gate: ModelCallGate | None = None


class Agenda:
    def __init__(self, parts: AgendaParts) -> None:
        settings = parts.settings
        self._db = parts.db
        self._settings = settings
        self._animas = parts.animas
        self._outbox = parts.outbox
        self._clock = parts.clock
        self._paused = parts.paused
        self._memory = parts.memory
        self._consolidator = parts.consolidator
        self._run_command = parts.run_command
        self._live = parts.live
        self._books: dict[str, CronBook] = {}
        self._targets = TargetResolver(parts.db)
        self._thinker = Thinker(settings, parts.responders, parts.memory, parts.animas.roles)
        paced_by = settings.scheduler
        self.gate: ModelCallGate = parts.gate or LocalGate(
            paced_by.max_model_calls, parts.clock, paced_by.rate_limit_pause_s
        )

    def timezone(self, anima: Anima) -> str:
        return effective_timezone(anima, self._settings.hub)

    # planning --------------------------------------------------------------------------

    def reload_crons(self) -> bool:
        """Re-read changed crons/*.md files (problems go to the Anima's log); True if the
        set of jobs may have changed."""
        changed = False
        names = set(self._animas.names())
        for gone in set(self._books) - names:
            del self._books[gone]
            changed = True
        for anima in self._animas.all():
            book = self._books.get(anima.name)
            if book is None or book.timezone != self.timezone(anima):
                book = CronBook(anima.name, anima.path / "crons", self.timezone(anima))
                self._books[anima.name] = book
                changed = True
            changed = book.reload() or changed
        return changed

    def specs(self) -> list[JobSpec]:
        specs: list[JobSpec] = []
        animas = self._animas.all()
        phases = self._phases(animas)
        self.gate.pace(self._pace(animas))
        for anima in animas:
            tz = self.timezone(anima)
            # At the Anima's own phase of its interval (hub/schedule/spread.py), so that many
            # Animas'
            # heartbeats do not all beat in the same second.
            minutes = anima.spec.heartbeat.interval_minutes
            every = heartbeat_trigger(phases[anima.name], minutes, tz)
            specs.append(JobSpec(f"heartbeat:{anima.name}", JobKind.HEARTBEAT, anima.name, every))
            book = self._books.get(anima.name)
            for job in book.jobs if book else []:
                specs.append(
                    JobSpec(job.key, JobKind.CRON, anima.name, job.trigger(tz), CRON_GRACE)
                )
            if self._consolidator is not None:
                specs.extend(self._consolidation_specs(anima.name, tz))
        return specs

    @staticmethod
    def _phases(animas: list[Anima]) -> dict[str, timedelta]:
        """Each Anima's heartbeat phase, spread among the Animas that share its interval."""
        by_interval: dict[int, list[str]] = {}
        for anima in animas:
            by_interval.setdefault(anima.spec.heartbeat.interval_minutes, []).append(anima.name)
        phases: dict[str, timedelta] = {}
        for minutes, names in by_interval.items():
            phases.update(offsets(names, timedelta(minutes=minutes)))
        return phases

    @staticmethod
    def _pace(animas: list[Anima]) -> float:
        """How many scheduled model calls may start a second after a 429: 1.5 times the
        mean the heartbeats are planned at, at least two, so what waited out the pause
        drains without a burst (hub/model/gate.py)."""
        mean = sum(1 / (a.spec.heartbeat.interval_minutes * 60) for a in animas)
        return max(PACED_AT_LEAST, math.floor(PACE_OVER_MEAN * mean))

    @staticmethod
    def _consolidation_specs(name: str, tz: str) -> list[JobSpec]:
        return [
            JobSpec(
                f"daily:{name}", JobKind.DAILY, name, CronTrigger(hour=0, minute=0, timezone=tz)
            ),
            JobSpec(
                f"weekly:{name}",
                JobKind.WEEKLY,
                name,
                CronTrigger(day_of_week="sun", hour=0, minute=30, timezone=tz),
            ),
            JobSpec(
                f"monthly:{name}",
                JobKind.MONTHLY,
                name,
                CronTrigger(day=1, hour=1, minute=0, timezone=tz),
            ),
        ]

    # running ---------------------------------------------------------------------------

    async def run(self, fire: Fire) -> None:
        anima = self._animas.get(fire.anima)
        if anima is None:
            return
        if self._paused(anima.name):
            log.info("%s skipped: %s is paused", fire.key, anima.name, extra={"anima": anima.name})
            return
        began = time.monotonic()
        outcome = await self._run(anima, fire)
        if outcome is not None and fire.kind is not JobKind.HEARTBEAT:  # heartbeat() logs
            log.info("%s", outcome.logged(time.monotonic() - began), extra={"anima": anima.name})

    async def _run(self, anima: Anima, fire: Fire) -> Outcome | None:
        tz = self.timezone(anima)
        if fire.kind is JobKind.HEARTBEAT:
            if not hb.in_active_hours(anima.spec.heartbeat.active_hours, fire.at, tz):
                return None
            return await self.heartbeat(anima, fire.at, f"{fire.key}@{fire.at.isoformat()}")
        if fire.kind is JobKind.CRON:
            job = self._cron(anima.name, fire.key)
            if job is None:
                log.warning("cron %s no longer exists", fire.key, extra={"anima": anima.name})
                return None
            return await self.cron(anima, job, fire.at)
        return await self.consolidate(anima, fire.kind, fire.at)

    def _cron(self, anima: str, key: str) -> CronJob | None:
        book = self._books.get(anima)
        return next((j for j in book.jobs if j.key == key), None) if book else None

    async def heartbeat_now(self, name: str) -> Outcome:
        """One heartbeat at once (CLI, API, `/anima heartbeat`), outside the schedule."""
        anima = self._animas.get(name)
        if anima is None:
            raise LookupError(f"no Anima named {name!r}")
        at = self._clock.now()
        return await self.heartbeat(anima, at, f"heartbeat-now:{name}@{at.isoformat()}", True)

    async def heartbeat(self, anima: Anima, at: datetime, key: str, asked: bool = False) -> Outcome:
        """One heartbeat, scheduled or `asked` for; its time and outcome are kept as the
        Anima's last heartbeat, and logged."""
        began = time.monotonic()
        last = hb.last_run_at(self._db, anima.name)
        interval = timedelta(minutes=anima.spec.heartbeat.interval_minutes)
        outcome = await self._beat(anima, hb.since(last, at, interval), at, key)
        said = outcome.said()
        # `at`, not the time it finished: what arrived while it ran is the next one's news.
        # Never back: a late catch-up run must not make the next heartbeat repeat news.
        hb.record_run(self._db, anima.name, max(at, last) if last else at, said)
        # Public, as the Anima's card shows it to anyone: the dashboard re-reads the card.
        self._live.publish("heartbeat", None, anima=anima.name, outcome=said)
        logged = outcome.logged(time.monotonic() - began)
        log.info("%s%s", "asked for: " if asked else "", logged, extra={"anima": anima.name})
        return outcome

    async def _beat(self, anima: Anima, since: datetime, at: datetime, key: str) -> Outcome:
        targets = self._targets.resolve(anima.name, anima.spec.heartbeat.channels)
        tz = self.timezone(anima)
        obs = hb.observe(self._db, anima.name, since, at)
        texts: list[tuple[list[Resolved], str]] = []
        thoughts: list[Thought] = []
        for group in groups(targets) or [[]]:
            keys = {t.address.channel_key for t in group if t.address is not None}
            text = hb.digest(obs, keys, tz)
            if self._model(anima) and not obs.quiet:
                thought = await self._think(anima, hb.prompt(obs, keys, tz), group)
                thoughts += [thought] if thought is not None else []
                text = thought.text if thought is not None else text
            if not hb.is_ok(text):
                texts.append((group, text))
        effort = _effort(self._model(anima), thoughts)
        if not texts:
            return Outcome(
                anima.name, "heartbeat: nothing to say", text=hb.HEARTBEAT_OK, effort=effort
            )
        posted: tuple[str, ...] = ()
        for group, text in texts:
            posted += self._post(anima.name, text, group, DeliveryKind.HEARTBEAT, key)
            self._remember(anima.name, key, f"**{anima.name}** (heartbeat): {text}", group, at)
        failed = self._undeliverable(anima.name, targets, DeliveryKind.HEARTBEAT, key)
        return Outcome(anima.name, "heartbeat posted", posted, texts[0][1], failed, effort)

    async def cron(self, anima: Anima, job: CronJob, at: datetime) -> Outcome:
        # Both kinds post to `post_to`, else to the heartbeat channels (docs/crons.md).
        written = [str(t) for t in job.post_to] or anima.spec.heartbeat.channels
        targets = self._targets.resolve(anima.name, written)
        key = f"{job.key}@{at.isoformat()}"
        by_scope = groups(targets)
        texts: list[tuple[list[Resolved], str]] = []
        thoughts: list[Thought] = []
        if job.kind == "command":
            assert job.command is not None  # the parser guarantees it for command crons
            first = by_scope[0][0].address if by_scope else None
            shown = await self._run_command(anima.name, job.command, first)
            texts = [(group, shown) for group in by_scope]  # a command's output is one text
        else:
            for group in by_scope:
                thought = await self._think(anima, job.body, group) if self._model(anima) else None
                thoughts += [thought] if thought is not None else []
                texts.append((group, thought.text if thought is not None else _offline_cron(job)))
            shown = texts[0][1] if texts else _offline_cron(job)
        posted: tuple[str, ...] = ()
        for group, text in texts:
            posted += self._post(anima.name, text, group, DeliveryKind.REPORT, key)
            self._remember(anima.name, key, f"**{anima.name}** ({job.title}): {text}", group, at)
        failed = self._undeliverable(anima.name, targets, DeliveryKind.REPORT, key)
        did = "posted" if posted else "not posted"
        # The log gets one line; the output in full where it is posted, or if nowhere, here.
        said = f" said {one_line(shown, not posted)}," if job.kind == "command" else ""
        what = f"cron {job.title!r}{said} {did}"
        effort = _effort(self._model(anima), thoughts)
        return Outcome(anima.name, what, posted, shown, failed, effort)

    async def consolidate(self, anima: Anima, kind: JobKind, at: datetime) -> Outcome:
        if self._consolidator is None:
            return Outcome(anima.name, f"{kind.value} consolidation: memory is off")
        local = at.astimezone(ZoneInfo(self.timezone(anima))).date()
        if kind is JobKind.DAILY:
            report = await self._consolidator.daily(anima.name, local - timedelta(days=1), at)
        elif kind is JobKind.WEEKLY:
            report = await self._consolidator.weekly(anima.name, local, at)
        else:
            report = await self._consolidator.monthly(anima.name, local, at)
        return Outcome(anima.name, report.summary())

    # helpers ---------------------------------------------------------------------------

    def _model(self, anima: Anima) -> str:
        return effective_model(anima, self._settings.llm)

    async def _think(self, anima: Anima, task: str, group: list[Resolved]) -> Thought | None:
        """A turn with no one asking, in the scope of the targets it will be posted to.
        None when the model fails (logged), so the caller falls back to offline text."""
        try:
            # Under the cap on scheduled model calls; a 429 waits and asks again (model_gate).
            thought = await paced(
                self.gate,
                lambda: self._thinker.think(
                    anima,
                    task,
                    group,
                    "a scheduled moment of your own (a heartbeat or a cron task)",
                ),
            )
        except LLMError as exc:
            # Its kind and fix for the operator; the run posts its offline text, and the next
            # heartbeat or cron run asks the model again (its 429s pace the schedule).
            log.error(
                "model failed on a scheduled task (%s): %s; fix: %s",
                exc.kind.value,
                exc,
                exc.kind.fix,
                extra={"anima": anima.name},
            )
            return None
        return thought

    def _post(
        self, anima: str, text: str, group: list[Resolved], kind: DeliveryKind, key: str
    ) -> tuple[str, ...]:
        post = Post(text, kind, anima, key, "not written")
        return tuple(str(t.address) for t in group if self._post_one(post, t))

    def _undeliverable(
        self, anima: str, targets: list[Resolved], kind: DeliveryKind, key: str
    ) -> tuple[str, ...]:
        """Record each target that could not be resolved as a failed delivery, visibly."""
        post = Post("", kind, anima, key, "not written")
        failed = [t for t in targets if t.address is None]
        for target in failed:
            self._post_one(post, target)
        return tuple(f"{t.written} ({t.error})" for t in failed)

    def _post_one(self, post: Post, target: Resolved) -> bool:
        """Each target in a transaction of its own: one posted before (a run again after a
        stop) is skipped, the others still posted. True when it was posted now."""
        try:
            with self._db.write() as conn:
                return post_to(conn, self._outbox, post, target)
        except IntegrityError:  # posted, or its failure recorded, by an earlier run
            where = target.address or target.written
            log.info("already posted %s to %s", post.key, where, extra={"anima": post.poster})
            return False

    def _remember(
        self, anima: str, key: str, text: str, group: list[Resolved], at: datetime
    ) -> None:
        if self._memory is None or not group:
            return
        scope = scope_of(anima, group)
        # One note per scope: a DM's text is that person's, kept apart from the channels'.
        note = f"{key}>{group[0].group}" if scope.is_dm else key
        self._memory.record_note(
            anima, note, text, scope.scope_of_new_item(), scope.channel_key, at
        )


def _offline_cron(job: CronJob) -> str:
    return (
        f"**{job.title}** (scheduled task; no language model is configured, so here is the "
        f"task as written)\n\n{job.body}"
    )
