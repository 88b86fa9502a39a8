"""Crons posting to Telegram and LINE chats, and a person's morning briefing in their DM.

Real hubs with the real Telegram and LINE adapters against the fake platforms
(animahub_kit/fakes/), crons written as files under animas/<name>/crons/, run by the scheduler on a
manual clock (or the agenda's run path); what arrived is read from the fake's record.
"""

from __future__ import annotations

import itertools
import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import col, select

from animahub_kit.contract import line_harness, telegram_harness
from animahub_kit.contract.harness import ScriptedResponder, eventually
from animahub_kit.contract.telegram_harness import BOT_ID, CHANNELS, PEOPLE
from hub.app import Hub
from hub.clock import ManualClock
from hub.memory.recall import RecallScope
from hub.schedule.scheduler import Fire, JobKind, Scheduler
from hub.store.models import AuditEntry, DeliveryRow, Identity
from tests.schedule.conftest import deliveries, open_life, say, web_address

BRIEFING = """# kai's schedule for the team and for Alice

## Morning briefing
schedule: 0 7 * * *
type: llm
post_to: {alice}
Brief me on today: my calendar and what I asked you to remember.

## Group digest
schedule: 0 7 * * *
type: llm
post_to: {group}
Post the team's digest for today.

## Carol's briefing
schedule: 0 7 * * *
type: llm
post_to: {carol}
Brief Carol on today.
"""


def give_kai_a_model(hub: Hub) -> None:
    """So cron runs are model turns: the harness's scripted responder answers them."""
    kai = hub.animas.get("kai")
    assert kai is not None
    toml = kai.path / "anima.toml"
    toml.write_text(toml.read_text().replace('model = ""', 'model = "test/scripted"'))
    hub.animas.load()


def write_crons(hub: Hub, text: str) -> None:
    kai = hub.animas.get("kai")
    assert kai is not None
    (kai.path / "crons" / "daily.md").write_text(text)


def person_of(hub: Hub, platform: str, user_id: str) -> str:
    with hub.db.session() as session:
        identity = session.get(Identity, (platform, user_id))
    assert identity is not None
    return identity.person_id


def scheduled_turns(responder: ScriptedResponder) -> dict[str, RecallScope]:
    """The task text of each scheduled turn of kai, and the privacy scope it ran in."""
    return {
        ctx.text: RecallScope.of(ctx.tools)
        for ctx in responder.seen
        if ctx.tools.conversation == "schedule:kai"
    }


def failed_posts(hub: Hub) -> list[DeliveryRow]:
    with hub.db.session() as session:
        return list(session.exec(select(DeliveryRow).where(DeliveryRow.status == "failed")).all())


async def run_the_schedule(hub: Hub, clock: ManualClock) -> None:
    """The hub's crons, planned on a scheduler driven by a manual clock, up to 07:01."""
    hub.agenda.reload_crons()
    scheduler = Scheduler(hub.db, clock, hub.agenda.run)
    scheduler.open()
    try:
        scheduler.plan([s for s in hub.agenda.specs() if s.kind is JobKind.CRON])
        seven = clock.now().replace(hour=7, minute=0, second=0) + timedelta(days=1)
        clock.advance(seven + timedelta(minutes=1) - clock.now())
        await scheduler.run_due()
    finally:
        await scheduler.close()


async def test_a_telegram_morning_briefing_reaches_the_right_dm_in_that_persons_scope(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with telegram_harness.open_harness(tmp_path) as h:
        give_kai_a_model(h.hub)
        await h.dm("alice", "hello")
        await h.dm("bob", "hello from bob")
        await h.say("carol", "random", "morning all", mention=True)  # Carol: only in a group
        await eventually(lambda: len(h.fake.messages) >= 3)
        before = len(h.fake.messages)
        group = f"telegram:{BOT_ID}/{CHANNELS['random']}"
        write_crons(
            h.hub,
            BRIEFING.format(
                alice=f"dm:telegram:{PEOPLE['alice']}",
                group=group,
                carol=f"dm:telegram:{PEOPLE['carol']}",
            ),
        )
        clock = ManualClock(datetime(2026, 3, 2, 6, 30, tzinfo=UTC))
        with caplog.at_level(logging.ERROR):
            await run_the_schedule(h.hub, clock)

        new = await eventually(
            lambda: h.fake.messages[before:] if len(h.fake.messages) >= before + 2 else None
        )
        by_chat = {m.chat_id: m.text for m in new}
        assert set(by_chat) == {PEOPLE["alice"], CHANNELS["random"]}
        assert (
            by_chat[PEOPLE["alice"]]
            == "echo: Brief me on today: my calendar and what I asked you to remember."
        )
        assert by_chat[CHANNELS["random"]] == "echo: Post the team's digest for today."
        assert PEOPLE["bob"] not in by_chat and PEOPLE["carol"] not in by_chat

        # The briefing was thought in Alice's DM scope; the group's in the group's.
        alice = person_of(h.hub, "telegram", str(PEOPLE["alice"]))
        scopes = scheduled_turns(h.responder)
        briefing = scopes["Brief me on today: my calendar and what I asked you to remember."]
        assert briefing.scopes() == ("shared", f"person:{alice}")
        digest = scopes["Post the team's digest for today."]
        assert digest.scopes() == ("shared", f"channel:{group}")
        assert "Brief Carol on today." not in scopes  # no DM to think for

        # Carol never wrote to the bot privately: her briefing failed, visibly.
        (failed,) = failed_posts(h.hub)
        assert failed.address == f"dm:telegram:{PEOPLE['carol']}"
        assert failed.error is not None and "no direct conversation" in failed.error
        assert f"dm:telegram:{PEOPLE['carol']}" in caplog.text
        with h.hub.db.session() as session:
            audit = session.exec(
                select(AuditEntry).where(col(AuditEntry.action) == "delivery.failed")
            ).all()
        assert [a.where for a in audit] == [f"dm:telegram:{PEOPLE['carol']}"]

        # The same run again (a crash before its next time was stored) records nothing twice.
        job = next(j for j in h.hub.agenda.specs() if j.key.endswith("carol-s-briefing"))
        scheduled = datetime(2026, 3, 3, 7, 0, tzinfo=UTC)  # when run_the_schedule ran it
        await h.hub.agenda.run(Fire(job.key, JobKind.CRON, "kai", scheduled))
        assert len(failed_posts(h.hub)) == 1


async def test_a_cron_posts_to_a_telegram_forum_topic(tmp_path: Path) -> None:
    async with telegram_harness.open_harness(tmp_path) as h:
        h.fake.add_topic(CHANNELS["general"], 77)
        before = len(h.fake.messages)
        topic = f"telegram:{BOT_ID}/{CHANNELS['general']}#77"
        write_crons(
            h.hub, f"## Standup\nschedule: 0 7 * * *\ntype: llm\npost_to: {topic}\nStandup!\n"
        )
        await run_the_schedule(h.hub, ManualClock(datetime(2026, 3, 2, 6, 30, tzinfo=UTC)))
        (posted,) = await eventually(lambda: h.fake.messages[before:])
        assert (posted.chat_id, posted.thread_id, posted.reply_to) == (
            CHANNELS["general"],
            77,
            None,
        )
        assert "Standup!" in posted.text  # offline: the task as written


async def test_line_crons_push_to_a_group_and_to_a_persons_dm(tmp_path: Path) -> None:
    async with line_harness.open_harness(tmp_path) as h:
        give_kai_a_model(h.hub)
        alice_id = line_harness.user_id("alice")
        group_id = line_harness.CHANNELS["general"]
        await h.dm("alice", "hello")
        await h.say("bob", "general", "morning", mention=True)
        await eventually(lambda: len(h.fake.messages) >= 2)
        before = len(h.fake.messages)
        write_crons(
            h.hub,
            BRIEFING.format(
                alice=f"dm:line:{alice_id}",
                group=f"line:{line_harness.BOT_USER}/{group_id}",
                carol=f"dm:line:{line_harness.user_id('carol')}",
            ),
        )
        h.hub.agenda.reload_crons()
        at = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)
        for spec in h.hub.agenda.specs():
            if spec.kind is JobKind.CRON:
                await h.hub.agenda.run(Fire(spec.key, JobKind.CRON, "kai", at))

        new = await eventually(
            lambda: h.fake.messages[before:] if len(h.fake.messages) >= before + 2 else None
        )
        assert {(m.to, m.via) for m in new} == {(alice_id, "push"), (group_id, "push")}
        assert all(m.retry_key for m in new)
        by_chat = {m.to: m.text for m in new}
        assert "Brief me on today" in by_chat[alice_id]
        assert "team's digest" in by_chat[group_id]
        alice = person_of(h.hub, "line", alice_id)
        scopes = scheduled_turns(h.responder)
        assert scopes[
            "Brief me on today: my calendar and what I asked you to remember."
        ].scopes() == (
            "shared",
            f"person:{alice}",
        )
        (failed,) = failed_posts(h.hub)
        assert failed.address == f"dm:line:{line_harness.user_id('carol')}"


async def test_a_pasted_dm_address_posts_as_a_dm_and_is_remembered_in_that_persons_scope(
    home: Path, clock: ManualClock
) -> None:
    hub = await open_life(home, clock, memory={"enabled": True})
    try:
        dm = web_address(dm_with="alice")
        await say(hub, "alice", "kai, remind me about the dentist", dm)
        write_crons(
            hub,
            f"## Reminder\nschedule: 0 7 * * *\ntype: llm\npost_to: {dm}, web:local/general\n"
            "Remind Alice.\n",
        )
        hub.agenda.reload_crons()
        job = next(s for s in hub.agenda.specs() if s.kind is JobKind.CRON)
        await hub.agenda.run(Fire(job.key, JobKind.CRON, "kai", clock.now()))
        kinds = {d.address: d.address_kind for d in deliveries(hub, "report")}
        assert kinds == {str(dm): "dm", "web:local/general": "channel"}
        day = clock.now().date().isoformat()
        episodes = (hub.animas.root / "kai" / "episodes" / f"{day}.md").read_text()
        lines = episodes.splitlines()
        scopes = {
            json.loads(meta.removeprefix("<!-- memory: ").removesuffix(" -->"))["scope"]
            for meta, text in itertools.pairwise(lines)
            if meta.startswith("<!-- memory:") and "(Reminder)" in text
        }
        alice = person_of(hub, "web", "alice")
        assert scopes == {f"person:{alice}", "channel:web:local/general"}
    finally:
        await hub.stop()


async def test_a_failed_target_never_holds_what_was_written_for_another_persons_dm(
    tmp_path: Path,
) -> None:
    async with telegram_harness.open_harness(tmp_path) as h:
        give_kai_a_model(h.hub)
        await h.dm("alice", "hello")
        await eventually(lambda: len(h.fake.messages) >= 1)
        alice, carol = (f"dm:telegram:{PEOPLE[p]}" for p in ("alice", "carol"))
        write_crons(
            h.hub,
            "## Both\nschedule: 0 7 * * *\ntype: llm\n"
            f"post_to: {alice}, {carol}\nAlice's private plan for the day.\n",
        )
        await run_the_schedule(h.hub, ManualClock(datetime(2026, 3, 2, 6, 30, tzinfo=UTC)))
        await eventually(lambda: any("private plan" in m.text for m in h.fake.messages))
        (failed,) = failed_posts(h.hub)
        assert failed.address == carol
        assert "private plan" not in failed.text and carol in failed.text
