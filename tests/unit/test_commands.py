"""hub/commands: parsing, every command's answer, admin rights and the audit log.

The CommandService is built directly on a real database (SQLite and PostgreSQL), with a
recording heartbeat trigger and a recording submit in place of the runtime.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from hub.animas import AnimaRegistry
from hub.commands import USAGE, is_command_text, parse_command
from hub.commands.handler import CommandService
from hub.commands.state import AnimaStates, paused_notice
from hub.identity import IdentityService
from hub.inbox import Inbox
from hub.ingress import Ingress
from hub.mailbox import TurnJob
from hub.messages import (
    Address,
    AddressKind,
    Command,
    DeliveryKind,
    DeliveryStatus,
    Inbound,
    PlatformUser,
)
from hub.outbox import Outbox
from hub.roles import load_roles
from hub.settings import Settings
from hub.store.db import Database
from hub.store.models import (
    AnimaState,
    AuditEntry,
    ChannelBinding,
    DeliveryRow,
    Identity,
    InboxItem,
    InboxStatus,
    Turn,
)
from hub.targets import DirectTarget, parse_target
from tests.conftest import DEMO, make_settings

ROOT = PlatformUser("slack", "UROOT", "Root")
ALICE = PlatformUser("slack", "UALICE", "Alice")
BOT = PlatformUser("slack", "UBOT", "Bot", is_bot=True)
CHANNEL = Address("slack", "T1", "C1")
THREAD = CHANNEL.in_thread("1700000000.0001")
OTHER = Address("slack", "T1", "C9")
_ids = itertools.count()


# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/anima list", Command("anima", ("list",))),
        ("/anima bind aria", Command("anima", ("bind", "aria"))),
        ("  /anima   status   kai  ", Command("anima", ("status", "kai"))),
        ("/whoami", Command("whoami")),
        ("/WhoAmI", Command("whoami")),
        ("/anima@AnimaHubBot pause aria", Command("anima", ("pause", "aria"))),
        ("/anima", Command("anima")),
    ],
)
def test_typed_commands_parse(text: str, expected: Command) -> None:
    assert parse_command(text) == expected
    assert is_command_text(text)


@pytest.mark.parametrize(
    "text",
    ["hello", "/etc/hosts is broken", "/", "/ anima list", "", "please /anima list", "/animals"],
)
def test_other_text_is_not_a_command(text: str) -> None:
    assert parse_command(text) is None
    assert not is_command_text(text)


# --- the service ---------------------------------------------------------------------------


@dataclass
class Recorder:
    """Stands in for the heartbeat trigger and the runtime's submit."""

    beats: list[str] = field(default_factory=list)
    submitted: list[TurnJob] = field(default_factory=list)
    fail_with: Exception | None = None

    async def heartbeat(self, name: str) -> str:
        self.beats.append(name)
        if self.fail_with is not None:
            raise self.fail_with
        return "posted 1 message to web:local/general"

    def submit(self, job: TurnJob) -> None:
        self.submitted.append(job)


@dataclass
class Parts:
    db: Database
    settings: Settings
    animas: AnimaRegistry
    identity: IdentityService
    states: AnimaStates
    service: CommandService
    calls: Recorder


@pytest.fixture
def parts(db: Database, home: Path) -> Iterator[Parts]:
    settings = make_settings(
        home,
        hub={"default_anima": "mika", "admins": ["slack:UROOT"], "timezone": "Asia/Tokyo"},
    )
    animas = AnimaRegistry(home / "animas", load_roles())
    for name, role, supervisor in DEMO:
        animas.create(name, role, supervisor)
    identity = IdentityService(db, home / "shared" / "users", ["slack:UROOT"], "Asia/Tokyo", "ja")
    states = AnimaStates(db, Inbox(db), Outbox(db, {}, settings.outbox))
    calls = Recorder()
    service = CommandService(
        db, Inbox(db), settings, animas, identity, states, calls.submit, calls.heartbeat
    )
    yield Parts(db, settings, animas, identity, states, service, calls)


def command(
    text: str, sender: PlatformUser = ROOT, address: Address = CHANNEL, event_id: str = ""
) -> Inbound:
    return Inbound(
        event_id=event_id or f"cmd-{next(_ids)}",
        address=address,
        sender=sender,
        text=text,
        command=parse_command(text),
    )


async def run(parts: Parts, text: str, **kw: Any) -> str:
    inbound = command(text, **kw)
    return await parts.service.handle(inbound, parts.identity.resolve(inbound.sender))


def audit(db: Database) -> list[AuditEntry]:
    with db.session() as session:
        return list(session.exec(select(AuditEntry).order_by(col(AuditEntry.id))).all())


def bindings(db: Database) -> dict[str, str]:
    with db.session() as session:
        return {b.channel_key: b.anima for b in session.exec(select(ChannelBinding)).all()}


def inbox_row(db: Database, address: Address, anima: str | None, status: InboxStatus) -> str:
    ingress = Ingress(db, 32 * 1024)
    row, _ = ingress.accept(Inbound(f"m-{next(_ids)}", address, ALICE, "hello"))
    with db.session() as session:
        stored = session.get(InboxItem, row.id)
        assert stored is not None
        stored.anima, stored.status = anima, status
        session.add(stored)
    return row.id


# --- /anima list and status ----------------------------------------------------------------


async def test_list_shows_role_supervisor_run_state_and_bindings(parts: Parts) -> None:
    await run(parts, "/anima bind aria")
    await run(parts, "/anima bind aria", address=OTHER)
    await run(parts, "/anima pause kai")

    reply = await run(parts, "/anima list", sender=ALICE)

    lines = reply.splitlines()
    assert lines[0] == "3 Animas:"
    assert lines[1] == (
        "- aria (researcher), supervisor mika, running; channels bound: slack:T1/C1, slack:T1/C9"
    )
    assert lines[2] == "- kai (engineer), supervisor mika, paused; channels bound: none"
    assert lines[3] == "- mika (manager), no supervisor, running; channels bound: none"


async def test_list_without_animas_says_how_to_create_one(parts: Parts) -> None:
    parts.animas.root = parts.animas.root.parent / "none"
    parts.animas.load()
    assert "animahub anima create" in await run(parts, "/anima list")


async def test_status_reports_model_state_bindings_counts_and_heartbeat(parts: Parts) -> None:
    db = parts.db
    await run(parts, "/anima bind aria")
    inbox_row(db, CHANNEL, "aria", InboxStatus.RECEIVED)
    inbox_row(db, CHANNEL, "aria", InboxStatus.PROCESSING)
    inbox_row(db, CHANNEL, "aria", InboxStatus.HELD)
    inbox_row(db, CHANNEL, "aria", InboxStatus.DONE)  # finished: not counted
    inbox_row(db, CHANNEL, "kai", InboxStatus.RECEIVED)  # another Anima's
    with db.session() as session:
        session.add(
            Turn(
                conversation=str(CHANNEL),
                channel_key=CHANNEL.channel_key,
                anima="aria",
                role="assistant",
                text="hi",
                created_at=datetime(2026, 3, 1, 1, 30, tzinfo=UTC),
            )
        )
        for status in ("failed", "failed", "sent"):
            session.add(
                DeliveryRow(
                    id=f"d-{next(_ids)}",
                    idempotency_key=f"k-{next(_ids)}",
                    address=str(CHANNEL),
                    channel_key=CHANNEL.channel_key,
                    address_kind=CHANNEL.kind.value,
                    text="x",
                    kind=DeliveryKind.REPLY,
                    anima="aria",
                    status=DeliveryStatus(status),
                )
            )

    reply = await run(parts, "/anima status aria", sender=ALICE)

    assert reply.splitlines() == [
        "aria (researcher: Researcher): running",
        "model: offline (no model configured)",
        "supervisor: mika",
        "bound to: slack:T1/C1",
        "last turn: 2026-03-01 10:30 Asia/Tokyo",
        "inbox: 2 pending, 1 held",
        "failed deliveries: 2",
        "heartbeat: every 30 min, active hours always, channels web:local/general",
    ]


async def test_status_of_a_paused_anima_with_its_own_model_and_no_turns(parts: Parts) -> None:
    toml = parts.animas.root / "kai" / "anima.toml"
    text = toml.read_text().replace('model = ""', 'model = "ollama/qwen3"')
    toml.write_text(text.replace('active_hours = ""', 'active_hours = "09:00-18:00"'))
    parts.animas.load()
    await run(parts, "/anima pause kai")

    lines = (await run(parts, "/anima status KAI")).splitlines()

    assert lines[0].endswith(": paused")
    assert "model: ollama/qwen3" in lines
    assert "bound to: none" in lines
    assert "last turn: never" in lines
    assert any(line.startswith("heartbeat:") and "09:00-18:00" in line for line in lines)


# --- /whoami -------------------------------------------------------------------------------


async def test_whoami_names_the_person_identities_roles_timezone_and_default(
    parts: Parts,
) -> None:
    root = parts.identity.resolve(ROOT)
    with parts.db.session() as session:
        session.add(Identity(platform="web", user_id="root", person_id=root.id))

    reply = await run(parts, "/whoami")

    assert reply.splitlines() == [
        f"You are Root (person id {root.id}).",
        "identities: slack:UROOT, web:root",
        "roles: admin (you are a hub admin)",
        "timezone: Asia/Tokyo",
        "language: ja",
        "default Anima: none (the hub default is mika)",
        "this conversation: slack:T1/C1 (channel)",
    ]


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (
            Address("telegram", "123456", "1001", None, AddressKind.DM),
            [
                "this conversation: telegram:123456/1001 (dm)",
                "your direct conversation, for post_to: dm:telegram:1001",
            ],
        ),
        (
            Address("telegram", "123456", "-100777", "42", AddressKind.GROUP),
            ["this conversation: telegram:123456/-100777#42 (group)"],
        ),
        (
            Address("line", "Ubot", "Cgroup", None, AddressKind.GROUP),
            ["this conversation: line:Ubot/Cgroup (group)"],
        ),
    ],
    ids=["telegram-dm", "telegram-topic", "line-group"],
)
async def test_whoami_says_where_it_was_asked_in_the_form_post_to_takes(
    parts: Parts, address: Address, expected: list[str]
) -> None:
    sender = PlatformUser(address.platform, "1001", "Alice")
    reply = await run(parts, "/whoami", sender=sender, address=address)
    assert reply.splitlines()[-len(expected) :] == expected
    # What it prints is what a cron's post_to accepts.
    for line in expected:
        written = line.split(": ", 1)[1].split(" (")[0]
        target = parse_target(written)
        if isinstance(target, DirectTarget):
            assert (target.platform, target.user_id) == (address.platform, "1001")
        else:
            assert target.channel_key == address.channel_key
            assert target.thread == address.thread


async def test_whoami_of_someone_who_is_not_an_admin(parts: Parts) -> None:
    reply = await run(parts, "/whoami", sender=ALICE)
    assert "roles: none (you are not a hub admin)" in reply
    assert "identities: slack:UALICE" in reply
    assert audit(parts.db) == []  # reading is not an admin action


# --- usage ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "first_line"),
    [
        ("/anima", "Unknown command."),
        ("/anima dance", "Unknown command /anima dance."),
        ("/anima status", "/anima status needs one Anima name."),
        ("/anima bind", "/anima bind needs one Anima name."),
        ("/anima pause aria kai", "/anima pause needs one Anima name."),
        ("/anima unbind aria", "/anima unbind takes no name."),
        ("/anima status nobody", "No Anima named 'nobody' (Animas: aria, kai, mika)."),
        ("/anima bind nobody", "No Anima named 'nobody' (Animas: aria, kai, mika)."),
    ],
)
async def test_bad_commands_get_a_usage_line(parts: Parts, text: str, first_line: str) -> None:
    reply = await run(parts, text)
    assert reply.splitlines() == [first_line, USAGE]
    assert all(c in USAGE for c in ("/anima list", "/anima unbind", "/whoami"))
    assert bindings(parts.db) == {}
    assert parts.calls.beats == []


async def test_a_mention_style_name_is_accepted(parts: Parts) -> None:
    await run(parts, "/anima bind @Aria")
    assert bindings(parts.db) == {"slack:T1/C1": "aria"}


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


# --- answer(): the inbox side --------------------------------------------------------------


def accept(db: Database, inbound: Inbound) -> tuple[InboxItem, bool]:
    return Ingress(db, 32 * 1024).accept(inbound)


def stored(db: Database, inbox_id: str) -> InboxItem:
    with db.session() as session:
        row = session.get(InboxItem, inbox_id)
    assert row is not None
    return row


async def test_answer_runs_a_command_once_and_closes_its_row(parts: Parts) -> None:
    inbound = command("/anima bind aria", event_id="slack-cmd-1")
    row, duplicate = accept(parts.db, inbound)

    reply = await parts.service.answer(row, inbound, duplicate)

    assert reply == "This channel is now bound to aria: it answers messages here."
    done = stored(parts.db, row.id)
    assert (done.status, done.anima, done.error) == ("done", None, None)
    assert done.person_id == parts.identity.resolve(ROOT).id
    assert done.finished_at is not None
    again, duplicate = accept(parts.db, inbound)
    assert duplicate and again.id == row.id
    assert await parts.service.answer(again, inbound, duplicate) == (
        "Already done: this command was run when it first arrived."
    )
    assert len(audit(parts.db)) == 1


async def test_a_redelivery_of_a_command_still_running_is_not_run_again(parts: Parts) -> None:
    inbound = command("/anima pause aria", event_id="slow-1")
    accept(parts.db, inbound)
    again, duplicate = accept(parts.db, inbound)
    assert duplicate
    reply = await parts.service.answer(again, inbound, duplicate)
    assert reply == "Already received: this command is still being run."
    assert not parts.states.is_paused("aria")


async def test_commands_from_bots_are_not_run(parts: Parts) -> None:
    inbound = command("/anima bind aria", sender=BOT)
    row, duplicate = accept(parts.db, inbound)
    assert await parts.service.answer(row, inbound, duplicate) == (
        "Commands sent by bots are not run."
    )
    assert stored(parts.db, row.id).status == "ignored"
    assert bindings(parts.db) == {}


async def test_a_failing_heartbeat_is_reported_audited_and_the_row_failed(parts: Parts) -> None:
    parts.calls.fail_with = RuntimeError("scheduler is not running")
    inbound = command("/anima heartbeat aria")
    row, duplicate = accept(parts.db, inbound)

    reply = await parts.service.answer(row, inbound, duplicate)

    assert reply == (
        "Sorry, that command failed (scheduler is not running). The details are in the hub log."
    )
    failed = stored(parts.db, row.id)
    assert failed.status == "failed"
    assert failed.error is not None and "scheduler is not running" in failed.error
    entry = audit(parts.db)[-1]
    assert entry.action == "anima.heartbeat"
    assert "scheduler is not running" in entry.detail["error"]
    again, duplicate = accept(parts.db, inbound)
    assert "failed when it first arrived" in await parts.service.answer(again, inbound, duplicate)
    assert parts.calls.beats == ["aria"]  # not triggered a second time


async def test_a_command_given_as_text_only_is_parsed_by_the_handler(parts: Parts) -> None:
    inbound = Inbound("t-1", CHANNEL, ROOT, "/anima bind kai")  # no Command attached
    await parts.service.handle(inbound, parts.identity.resolve(ROOT))
    assert bindings(parts.db) == {"slack:T1/C1": "kai"}


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
