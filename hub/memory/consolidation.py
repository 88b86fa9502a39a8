"""Consolidation and active forgetting: the Memory's `consolidate(...)` and `forget(...)`.

Four stages, each run for one Anima by the scheduler (or `animahub consolidate`):

- **session**: a conversation idle for a while is summarized into the episode log;
- **daily**: a day's episodes become knowledge and procedure notes (filed by
  `hub/memory/filing.py`), each with `sources:` back to its episode sections; a fact that
  contradicts a stored one supersedes it (or is superseded by it), and the loser stays on
  disk, out of recall;
- **weekly** (`hub/memory/weekly.py`): near-duplicate knowledge merged, stale procedures
  flagged, episodes older than 30 days compressed into summaries (originals archived);
- **monthly** (`hub/memory/forgetting.py`): notes unused for 90 days move to
  `archive/forgotten/`, restorable.

The markdown stays the truth and every write is atomic and redacted; the index follows each
stage. Every stage takes `now` from its caller and writes only times found in its inputs (or
that `now`), so a second run with the same inputs leaves every file byte for byte as it was.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hub.memory.distill import Distiller, Session, SessionTurn
from hub.memory.documents import (
    IMPORTANT_MARK,
    Layer,
    MemoryItem,
    append_episode,
    episode_path,
    has_section,
    read_episodes,
    stable_id,
)
from hub.memory.filing import Candidate, file_fact, winners
from hub.memory.forgetting import forget, restore
from hub.memory.notes import Changes, Ledger, load_notes
from hub.memory.service import MemoryService
from hub.memory.weekly import weekly
from hub.redaction.redact import redact

__all__ = [
    "STAGES",
    "Consolidator",
    "Session",
    "SessionTurn",
    "StageReport",
    "stage_days",
]

log = logging.getLogger(__name__)
Stage = Literal["daily", "weekly", "monthly"]
STAGES: tuple[Stage, ...] = ("daily", "weekly", "monthly")


_CHANGED = ("created", "updated", "superseded", "merged", "flagged", "compressed", "forgotten")


@dataclass(frozen=True, slots=True)
class StageReport:
    """What one stage run did; every entry is a path relative to the Anima's folder."""

    stage: str  # "session" | "daily" | "weekly" | "monthly"
    anima: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    compressed: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, stage: str, anima: str, changes: Changes) -> StageReport:
        def unique(paths: list[str]) -> list[str]:
            return list(dict.fromkeys(paths))

        return cls(
            stage,
            anima,
            unique(changes.created),
            unique(changes.updated),
            unique(changes.superseded),
            unique(changes.merged),
            unique(changes.flagged),
            unique(changes.compressed),
            unique(changes.forgotten),
        )

    def summary(self) -> str:
        """One line for logs and the CLI: "aria daily: 2 created, 1 superseded"."""
        counts = [f"{len(paths)} {name}" for name in _CHANGED if (paths := getattr(self, name))]
        return f"{self.anima} {self.stage}: {', '.join(counts) or 'nothing to do'}"

    @classmethod
    def combined(cls, stage: str, anima: str, reports: Sequence[StageReport]) -> StageReport:
        """Several runs of one stage as one report (each path once)."""
        changes = Changes()
        for report in reports:
            for name in _CHANGED:
                getattr(changes, name).extend(getattr(report, name))
        return cls.of(stage, anima, changes)

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "summary": self.summary()}


def stage_days(now: datetime, timezone: str) -> tuple[date, date]:
    """(yesterday, today) in the Anima's timezone: the daily stage's day, the others'."""
    try:
        zone = ZoneInfo(timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        log.warning("unknown timezone %r: consolidating by UTC days", timezone)
        zone = ZoneInfo("UTC")
    today = now.astimezone(zone).date()
    return today - timedelta(days=1), today


def _told(report: StageReport, about: str = "") -> StageReport:
    """`report`, said in its Anima's log as in the CLI ("aria daily: 2 created (2026-12-06)")."""
    log.info(
        "%s%s", report.summary(), f" ({about})" if about else "", extra={"anima": report.anima}
    )
    return report


class Consolidator:
    """Runs the stages for the Animas of one MemoryService, one stage at a time per Anima.

    `distiller` is one Distiller for every Anima, or a function giving each Anima its own
    (its model, see `hub.schedule.distill_llm.anima_distillers`)."""

    def __init__(
        self, memory: MemoryService, distiller: Distiller | Callable[[str], Distiller]
    ) -> None:
        self.memory = memory
        if isinstance(distiller, Distiller):
            fixed: Distiller = distiller
            self._distiller_for: Callable[[str], Distiller] = lambda _anima: fixed
        else:
            self._distiller_for = distiller
        self._locks: dict[str, asyncio.Lock] = {}

    def distiller(self, anima: str) -> Distiller:
        return self._distiller_for(anima)

    def _lock(self, anima: str) -> asyncio.Lock:
        return self._locks.setdefault(anima, asyncio.Lock())

    def undistilled_days(self, anima: str, until: date) -> list[date]:
        """Days up to `until` whose episodes hold sections not yet distilled, oldest first."""
        folder = self.memory.anima_dir(anima)
        ledger = Ledger(folder)
        days = []
        for path in sorted((folder / "episodes").glob("*.md")):
            try:
                day = date.fromisoformat(path.stem)
            except ValueError:
                continue  # not a day's file
            if day > until:
                continue
            relative = episode_path(day)
            done = ledger.distilled(relative)
            if any(s.id not in done for s in read_episodes(folder, path)):
                days.append(day)
        return days

    async def catch_up(self, anima: str, until: date, now: datetime) -> StageReport:
        """The daily stage for every day up to `until` not yet distilled (a hub that was
        off, or `consolidate --daily` run by hand): a section is still distilled once."""
        reports = [await self.daily(anima, day, now) for day in self.undistilled_days(anima, until)]
        report = StageReport.combined("daily", anima, reports)
        if not reports:  # each day's run logs itself; no day to run is worth a line too
            return _told(report, f"every day to {until.isoformat()}")
        return report

    async def run(
        self,
        anima: str,
        stage: Stage,
        now: datetime,
        timezone: str,
        *,
        day: date | None = None,
        with_today: bool = False,
    ) -> StageReport:
        """A stage run by hand (CLI, API), in the Anima's timezone: daily distils every day
        not yet distilled up to yesterday (up to today `with_today`), or just `day`."""
        yesterday, today = stage_days(now, timezone)
        if stage == "daily":
            if day is not None:
                return await self.daily(anima, day, now)
            return await self.catch_up(anima, today if with_today else yesterday, now)
        if stage == "weekly":
            return await self.weekly(anima, today, now)
        return await self.monthly(anima, today, now)

    # session ---------------------------------------------------------------------------

    async def session(self, session: Session, now: datetime) -> StageReport:
        """Summarize a finished session into the episode log, once per last turn."""
        changes = Changes()
        turns = sorted((t for t in session.turns if t.text.strip()), key=lambda t: t.at)
        if not turns:
            return StageReport.of("session", session.anima, changes)
        folder = self.memory.anima_dir(session.anima)
        first, last = turns[0].at.astimezone(UTC), turns[-1].at.astimezone(UTC)
        # Filed when and where it ended, so a session across midnight is in the new day.
        relative = episode_path(last.date())
        key = str(session.last_turn_id)
        item_id = stable_id("session", session.anima, session.conversation, key)
        if has_section(folder / relative, item_id):
            return StageReport.of("session", session.anima, changes)
        summary = await self.distiller(session.anima).summarize_session(session)
        header = (
            f"**Session summary** ({session.where}, {first:%H:%M}–{last:%H:%M} UTC, "
            f"{len(turns)} turns)"
        )
        text = redact(f"{header}\n{summary.strip()}")[0]
        important = any(IMPORTANT_MARK in t.text for t in turns)
        item = MemoryItem(
            id=item_id,
            layer=Layer.EPISODIC,
            text=text,
            path=relative,
            scope=session.scope,
            created=last,
            updated=last,
            person=session.person_id,
            channel=session.channel_key,
            importance=1.0 if important or IMPORTANT_MARK in text else 0.0,
            section=f"{last:%H:%M}",
        )
        async with self._lock(session.anima):
            if append_episode(folder, item):
                changes.created.append(relative)
                await self.memory.index_items(session.anima, [item])
        return StageReport.of("session", session.anima, changes)

    # daily -----------------------------------------------------------------------------

    async def daily(self, anima: str, day: date, now: datetime) -> StageReport:
        """Distill the day's episode sections into notes, with what the day before got
        after its own run (episode files are UTC days; the Anima's midnight may come
        before the UTC one). A section is distilled once."""
        changes = Changes()
        await self._distil_day(anima, day, changes)
        return _told(StageReport.of("daily", anima, changes), day.isoformat())

    async def _distil_day(self, anima: str, day: date, changes: Changes) -> None:
        folder = self.memory.anima_dir(anima)
        async with self._lock(anima):
            self.memory.flush_access()
            ledger = Ledger(folder)
            fresh: dict[str, list[MemoryItem]] = {}
            for relative in (episode_path(day - timedelta(days=1)), episode_path(day)):
                if (folder / relative).is_file():
                    done = ledger.distilled(relative)
                    items = read_episodes(folder, folder / relative)
                    fresh[relative] = [s for s in items if s.id not in done]
            sections = [s for items in fresh.values() for s in items]
            if not sections:
                return
            candidates = await self._extract(anima, folder, sections)
            # From here to the index update nothing awaits: the notes read are the notes
            # written over (the access flusher runs on this loop too).
            notes = load_notes(folder)
            taken: set[str] = set()
            for candidate in winners(candidates):
                file_fact(folder, notes, candidate, changes, taken)
            for relative, items in fresh.items():
                ledger.mark_distilled(relative, (s.id for s in items))
            ledger.save()
            await self.memory.refresh(anima, changes.reindex, changes.gone)

    async def _extract(
        self, anima: str, folder: Path, sections: Sequence[MemoryItem]
    ) -> list[Candidate]:
        """Ask the distiller, one privacy scope at a time: a fact never mixes scopes."""
        distiller = self.distiller(anima)
        scopes: dict[str, list[MemoryItem]] = {}
        for item in sections:
            scopes.setdefault(item.scope, []).append(item)
        notes = load_notes(folder)
        found: list[Candidate] = []
        for scope in sorted(scopes):
            group = scopes[scope]
            known = sorted({s for n in notes if n.active and n.scope == scope for s in n.subjects})
            by_id = {item.id: item for item in group}
            for fact in await distiller.extract(anima, group, known):
                sources = [by_id[s] for s in dict.fromkeys(fact.sources) if s in by_id]
                subject = redact(" ".join(fact.subject.casefold().split()))[0]
                if sources and subject and fact.text.strip():
                    sources.sort(key=lambda s: (s.created, s.id))
                    fact = replace(fact, subject=subject)
                    found.append(Candidate(fact, sources, fact.important))
        return found

    # weekly, monthly, restore ----------------------------------------------------------

    async def weekly(self, anima: str, today: date, now: datetime) -> StageReport:
        """Merge near-duplicates, flag stale procedures, compress old episodes."""
        changes = Changes()
        async with self._lock(anima):
            self.memory.flush_access()
            await weekly(self.memory, self.distiller(anima), anima, today, now, changes)
            await self.memory.refresh(anima, changes.reindex, changes.gone)
        return _told(StageReport.of("weekly", anima, changes))

    async def monthly(self, anima: str, today: date, now: datetime) -> StageReport:
        """Forget notes unused for long; skills, profiles and [IMPORTANT] items stay."""
        changes = Changes()
        async with self._lock(anima):
            self.memory.flush_access()
            folder = self.memory.anima_dir(anima)
            forget(folder, self.memory.access(anima), now, changes)
            await self.memory.refresh(anima, changes.reindex, changes.gone)
        return _told(StageReport.of("monthly", anima, changes))

    async def restore(self, anima: str, path: str, now: datetime | None = None) -> str:
        """Bring a forgotten note back (e.g. "archive/forgotten/knowledge/x.md", or just
        "knowledge/x.md"); return where it now is, indexed again."""
        async with self._lock(anima):
            folder = self.memory.anima_dir(anima)
            restored = restore(folder, path, now or datetime.now(UTC))
            await self.memory.refresh(anima, [restored])
        return restored
