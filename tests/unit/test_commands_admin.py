"""The commands that change things (bind/unbind, pause/resume, heartbeat): only admins may
run them, each run or refusal is audited, and a paused Anima's messages are held.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import col, select

from hub.commands.state import AnimaStates, paused_notice
from hub.delivery.outbox import Outbox
from hub.messages import Address, AddressKind
from hub.store.db import Database
from hub.store.models import AnimaState, ChannelBinding, DeliveryRow, InboxItem, InboxStatus
from hub.turns.inbox import Inbox
from hub.turns.mailbox import TurnJob
from tests.conftest import make_settings
from tests.unit.commands_helpers import (
    ALICE,
    CHANNEL,
    OTHER,
    ROOT,
    Parts,
    audit,
    bindings,
    inbox_row,
    run,
    stored,
)

THREAD = CHANNEL.in_thread("1700000000.0001")


# --- admin rights and the audit log --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("/anima bind aria", "bind channels"),
        ("/anima unbind", "unbind channels"),
        ("/anima pause aria", "pause Animas"),
        ("/anima resume aria", "resume Animas"),
        ("/anima heartbeat aria", "trigger heartbeats"),
        ("/anima bind nobody", "bind channels"),  # refused before anything else is said
    ],
)
async def test_non_admins_are_refused_politely_and_the_refusal_is_audited(
    parts: Parts, text: str, what: str
) -> None:
    await run(parts, "/anima bind kai")  # something for unbind to (not) remove
    await run(parts, "/anima pause kai")
    before = len(audit(parts.db))

    reply = await run(parts, text, sender=ALICE, address=THREAD)

    assert reply == (
        f"Sorry, only hub admins can {what}. Admins are listed in hub.toml [hub] admins."
    )
    entries = audit(parts.db)[before:]
    assert len(entries) == 1
    alice = parts.identity.resolve(ALICE)
    assert entries[0].action == "denied"
    assert entries[0].actor == "slack:UALICE"
    assert entries[0].where == "slack:T1/C1#1700000000.0001"
    assert entries[0].target == "anima." + text.split()[1]
    assert entries[0].detail["person"] == alice.id
    assert entries[0].detail["command"] == text
    assert entries[0].detail["args"] == text.split()[2:]
    assert bindings(parts.db) == {"slack:T1/C1": "kai"}
    assert parts.states.paused() == {"kai"}
    assert parts.calls.beats == []


async def test_bind_and_unbind_change_this_channel_and_are_audited(parts: Parts) -> None:
    root = parts.identity.resolve(ROOT)

    assert await run(parts, "/anima bind aria", address=THREAD) == (
        "This channel is now bound to aria: it answers messages here."
    )
    assert bindings(parts.db) == {"slack:T1/C1": "aria"}  # the channel, not the thread
    assert await run(parts, "/anima bind aria") == "This channel was already bound to aria."
    assert await run(parts, "/anima bind kai") == (
        "This channel is now bound to kai (it was bound to aria): it answers messages here."
    )
    with parts.db.session() as session:
        binding = session.get(ChannelBinding, "slack:T1/C1")
        assert binding is not None and binding.created_by == "slack:UROOT"
    assert await run(parts, "/anima unbind") == "This channel is no longer bound to kai."
    assert bindings(parts.db) == {}
    assert await run(parts, "/anima unbind") == (
        "This channel has no binding; there was nothing to unbind."
    )

    entries = audit(parts.db)
    assert [(e.action, e.target) for e in entries] == [
        ("anima.bind", "aria"),
        ("anima.bind", "aria"),
        ("anima.bind", "kai"),
        ("anima.unbind", "slack:T1/C1"),
        ("anima.unbind", "slack:T1/C1"),
    ]
    assert all(e.actor == "slack:UROOT" and e.detail["person"] == root.id for e in entries)
    assert entries[0].where == "slack:T1/C1#1700000000.0001"
    assert entries[0].detail["channel"] == "slack:T1/C1"
    assert entries[0].detail["previous"] is None
    assert entries[2].detail["previous"] == "aria"
    assert entries[3].detail["previous"] == "kai"
    assert entries[4].detail["previous"] is None


async def test_pause_and_resume_change_the_state_and_release_held_messages(
    parts: Parts,
) -> None:
    db = parts.db
    assert await run(parts, "/anima pause aria") == (
        "aria is paused: messages to it are kept and answered when it is resumed; "
        "its heartbeats and crons are skipped."
    )
    assert parts.states.is_paused("aria")
    assert not parts.states.is_paused("kai")
    assert await run(parts, "/anima pause aria") == "aria is already paused."
    state = parts.states.get("aria")
    assert state is not None and state.changed_by == "slack:UROOT"
    first = inbox_row(db, CHANNEL, "aria", InboxStatus.HELD)
    second = inbox_row(db, OTHER, "aria", InboxStatus.HELD)
    other = inbox_row(db, CHANNEL, "kai", InboxStatus.HELD)

    reply = await run(parts, "/anima resume aria")

    assert reply == "aria is running again; 2 held messages are being answered."
    assert not parts.states.is_paused("aria")
    assert [j.inbox_id for j in parts.calls.submitted] == [first, second]
    assert all(j.anima == "aria" for j in parts.calls.submitted)
    with db.session() as session:
        assert session.get(InboxItem, first).status == "received"  # type: ignore[union-attr]
        assert session.get(InboxItem, other).status == InboxStatus.HELD  # type: ignore[union-attr]
    assert await run(parts, "/anima resume aria") == "aria was not paused."
    entries = audit(db)
    assert [(e.action, e.target, e.detail.get("changed")) for e in entries] == [
        ("anima.pause", "aria", True),
        ("anima.pause", "aria", False),
        ("anima.resume", "aria", True),
        ("anima.resume", "aria", False),
    ]
    assert entries[2].detail["released"] == 2


async def test_heartbeat_trigger_runs_for_admins_only(parts: Parts) -> None:
    assert await run(parts, "/anima heartbeat kai", sender=ALICE) == (
        "Sorry, only hub admins can trigger heartbeats. Admins are listed in hub.toml [hub] admins."
    )
    assert parts.calls.beats == []

    reply = await run(parts, "/anima heartbeat kai")

    assert parts.calls.beats == ["kai"]
    assert reply == "Heartbeat of kai: posted 1 message to web:local/general"
    last = audit(parts.db)[-1]
    assert (last.action, last.target) == ("anima.heartbeat", "kai")
    assert last.detail["outcome"] == "posted 1 message to web:local/general"


async def test_heartbeat_of_a_paused_anima_is_not_triggered(parts: Parts) -> None:
    await run(parts, "/anima pause kai")
    reply = await run(parts, "/anima heartbeat kai")
    assert reply == "kai is paused; resume it before triggering a heartbeat."
    assert parts.calls.beats == []
    assert audit(parts.db)[-1].detail["skipped"] == "paused"


# --- holding -------------------------------------------------------------------------------


async def test_hold_keeps_the_message_and_tells_each_sender_once_per_channel(
    parts: Parts,
) -> None:
    db = parts.db
    dm = Address("slack", "T1", "D1", kind=AddressKind.DM)
    rows = [inbox_row(db, a, None, InboxStatus.RECEIVED) for a in (CHANNEL, CHANNEL, dm)]
    assert parts.states.hold(TurnJob(rows[0], "aria", str(CHANNEL), "p1")) is None  # running

    await run(parts, "/anima pause aria")
    notices = [parts.states.hold(TurnJob(r, "aria", "c", "p1")) for r in rows]

    assert notices == [paused_notice("aria")] * 3
    assert paused_notice("aria") == (
        "aria is paused; your message will be answered when an admin resumes it."
    )
    for inbox_id in rows:
        row = stored(db, inbox_id)
        assert (row.status, row.anima, row.person_id) == (InboxStatus.HELD, "aria", "p1")
    with db.session() as session:
        sent = session.exec(select(DeliveryRow).order_by(col(DeliveryRow.address))).all()
    assert [(d.address, d.kind, d.text, d.inbox_id) for d in sent] == [
        ("slack:T1/C1", "notice", paused_notice("aria"), None),
        ("slack:T1/D1", "notice", paused_notice("aria"), None),
    ]
    # A held row is not held (or noticed) twice.
    assert parts.states.hold(TurnJob(rows[0], "aria", "c", "p1")) is None

    # A new pause is a new notice.
    await run(parts, "/anima resume aria")
    await run(parts, "/anima pause aria")
    later = inbox_row(db, CHANNEL, None, InboxStatus.RECEIVED)
    assert parts.states.hold(TurnJob(later, "aria", "c", None)) == paused_notice("aria")
    with db.session() as session:
        assert len(session.exec(select(DeliveryRow)).all()) == 3


def test_pause_state_survives_a_new_connection(db: Database, database_url: str, home: Path) -> None:
    states = AnimaStates(db, Inbox(db), Outbox(db, {}, make_settings(home).outbox))
    assert states.pause("aria", "slack:UROOT")
    again = Database(database_url)
    try:
        with again.session() as session:
            row = session.get(AnimaState, "aria")
        assert row is not None and row.paused
    finally:
        again.dispose()
