"""Months of an Anima's life on the hub's manual clock, through the real scheduler.

People chat on several days; the schedule closes sessions, consolidates each night, merges
on Sunday and forgets on the first of the month. Everything runs through `Hub` exactly as
`animahub start` runs it, only the clock is the test's.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import frontmatter

from hub.app import Hub
from hub.clock import ManualClock
from hub.memory.recall import RecallScope
from hub.messages import Address, AddressKind
from tests.schedule.conftest import open_life, say

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
GENERAL = "web:local/general"


async def live(hub: Hub, clock: ManualClock, span: timedelta, step: timedelta) -> None:
    """Let time pass as `animahub start` would see it: a tick every `step`."""
    end = clock.now() + span
    while clock.now() < end:
        clock.advance(min(step, end - clock.now()))
        await hub.on_tick()
        await hub.scheduler.run_due()
    assert hub.memory is not None
    await hub.memory.drain()


def notes(hub: Hub, anima: str, folder: str) -> dict[str, frontmatter.Post]:
    root = hub.animas.root / anima / folder
    return {
        str(p.relative_to(hub.animas.root / anima)): frontmatter.load(p)
        for p in sorted(root.rglob("*.md"))
    }


def about(found: dict[str, frontmatter.Post], needle: str) -> list[frontmatter.Post]:
    return [post for post in found.values() if needle in post.content]


async def test_weeks_and_months_of_consolidation_and_forgetting(home: Path) -> None:
    clock = ManualClock(MONDAY)
    hub = await open_life(home, clock, memory={"enabled": True})
    try:
        assert hub.memory is not None and hub.consolidator is not None
        assert {"daily:aria", "weekly:aria", "monthly:aria"} <= set(hub.scheduler.job_ids())

        # Monday: facts in the channel, a secret in a DM, something important.
        await say(hub, "alice", "aria, the staging database is db-stage-3.")
        await say(hub, "alice", "aria, [IMPORTANT] the release branch is release-2026.")
        await say(hub, "bob", "aria, my locker code is 4711.", dm_to("aria", "bob"))
        await live(hub, clock, timedelta(hours=1), timedelta(minutes=5))
        episodes = (hub.animas.root / "aria" / "episodes" / "2026-03-02.md").read_text()
        assert "Session" in episodes or "session" in episodes  # the idle session was closed

        # Tuesday 01:00: Monday was consolidated at midnight.
        await live(hub, clock, timedelta(hours=15), timedelta(hours=1))
        knowledge = notes(hub, "aria", "knowledge")
        (stage3,) = about(knowledge, "db-stage-3")
        sources = stage3.metadata["sources"]  # frontmatter types its values `object`
        assert isinstance(sources, list) and any("2026-03-02" in str(src) for src in sources)
        assert stage3.metadata["scope"] == f"channel:{GENERAL}"
        (locker,) = about(knowledge, "4711")
        scope = locker.metadata["scope"]
        assert isinstance(scope, str) and scope.startswith("person:")

        # Tuesday: the fact changes. Wednesday's run supersedes the old note, keeps it.
        await live(hub, clock, timedelta(hours=9), timedelta(hours=1))
        await say(hub, "alice", "aria, the staging database is db-stage-4 now.")
        await live(hub, clock, timedelta(hours=16), timedelta(hours=1))
        knowledge = notes(hub, "aria", "knowledge")
        (old,) = about(knowledge, "db-stage-3")
        assert old.metadata["status"] == "superseded" and old.metadata["superseded_by"]
        (new,) = about(knowledge, "db-stage-4")
        assert new.metadata.get("status", "active") != "superseded"

        # Recall finds the consolidated knowledge, and only what this person may see.
        alice_scope = RecallScope("aria", None, GENERAL, False)
        found = await hub.memory.search(alice_scope, "which staging database?", limit=5)
        top_knowledge = [r for r in found if r.layer == "semantic"]
        assert top_knowledge and "db-stage-4" in top_knowledge[0].text
        assert not any("db-stage-3" in r.text for r in top_knowledge)
        leaked = await hub.memory.search(alice_scope, "locker code", limit=10)
        assert not any("4711" in r.text for r in leaked)

        # Four months pass with nobody asking about staging: monthly forgetting archives
        # the unused note; the [IMPORTANT] one and the profiles stay.
        await live(hub, clock, timedelta(days=125), timedelta(hours=12))
        knowledge = notes(hub, "aria", "knowledge")
        assert about(knowledge, "db-stage-4") == []
        forgotten = notes(hub, "aria", "archive/forgotten")
        (archived_path,) = [p for p, post in forgotten.items() if "db-stage-4" in post.content]
        assert about(knowledge, "release-2026")  # important: never forgotten
        assert list((home / "shared" / "users").glob("*.md"))  # profiles untouched
        found = await hub.memory.search(alice_scope, "staging database db-stage-4", limit=5)
        assert not any("db-stage-4" in r.text for r in found if r.layer == "semantic")

        # Old episodes were compressed on Sundays; the originals are archived, not lost.
        assert (hub.animas.root / "aria" / "archive" / "episodes" / "2026-03-02.md").exists()

        # `animahub memory restore` brings the note back, into recall too.
        restored = await hub.consolidator.restore("aria", archived_path)
        assert (hub.animas.root / "aria" / restored).exists()
        await hub.memory.drain()
        found = await hub.memory.search(alice_scope, "staging database db-stage-4", limit=5)
        assert any("db-stage-4" in r.text for r in found if r.layer == "semantic")
    finally:
        await hub.stop()


def dm_to(anima: str, user: str) -> Address:
    return Address("web", "local", f"dm:{anima}:{user}", "s1", AddressKind.DM)
