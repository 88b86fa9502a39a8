"""Commands through the whole hub (`Hub.receive`), on SQLite and PostgreSQL: binding routes
channel chatter, pausing holds messages across a restart, resuming answers them in order,
a redelivered command runs once, and the web chat answers a typed command."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import col, select

from hub.app import Hub
from hub.commands import parse_command
from hub.commands.state import paused_notice
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.settings import Settings
from hub.store.models import AuditEntry, ChannelBinding, DeliveryRow, InboxItem, InboxStatus, Turn
from hub.turns.mailbox import TurnJob
from tests.conftest import add_demo_animas, make_settings

ROOT = PlatformUser("web", "root", "root")  # an admin in these settings
ALICE = PlatformUser("web", "alice", "alice")
GENERAL = Address("web", "local", "general")
DM = Address("web", "local", "dm:aria:alice", "s1", AddressKind.DM)
_ids = itertools.count()


@pytest.fixture
def settings(home: Path, database_url: str) -> Settings:
    """The shared `hub` and `client` fixtures, on both databases."""
    return make_settings(
        home,
        hub={"default_anima": "mika", "admins": ["web:root"]},
        storage={"database_url": database_url},
    )


def cmd(text: str, sender: PlatformUser = ROOT, address: Address = GENERAL, **kw: Any) -> Inbound:
    kw.setdefault("event_id", f"cmd-{next(_ids)}")
    return Inbound(address=address, sender=sender, text=text, command=parse_command(text), **kw)


def msg(text: str, address: Address = DM, **kw: Any) -> Inbound:
    kw.setdefault("event_id", f"msg-{next(_ids)}")
    return Inbound(address=address, sender=ALICE, text=text, **kw)


async def settle(hub: Hub) -> None:
    """Wait until every accepted message is finished and every delivery sent."""
    for _ in range(500):
        with hub.db.session() as session:
            busy = session.exec(
                select(InboxItem).where(col(InboxItem.status).in_(("received", "processing")))
            ).first()
        idle = not any(hub.runtime.mailboxes.pending().values())
        if busy is None and idle and hub.outbox.counts().get("pending", 0) == 0:
            return
        hub.outbox.wake()
        await asyncio.sleep(0.02)
    raise AssertionError("the hub did not settle")


def rows(hub: Hub, table: Any, *where: Any) -> list[Any]:
    with hub.db.session() as session:
        return list(session.exec(select(table).where(*where)).all())


def inbox(hub: Hub, inbox_id: str) -> InboxItem:
    with hub.db.session() as session:
        row = session.get(InboxItem, inbox_id)
    assert row is not None
    return row


def user_turns(hub: Hub, anima: str) -> list[str]:
    with hub.db.session() as session:
        turns = session.exec(
            select(Turn).where(Turn.anima == anima, Turn.role == "user").order_by(col(Turn.id))
        ).all()
    return [t.text for t in turns]


# --- a command through Hub.receive ---------------------------------------------------------


async def test_a_command_is_answered_in_the_receipt_without_a_turn(hub: Hub) -> None:
    receipt = await hub.port.receive(cmd("/whoami", sender=ALICE))

    assert not receipt.duplicate
    assert receipt.reply is not None
    alice = hub.identity.resolve(ALICE).id  # opaque: made from no name
    assert receipt.reply.startswith(f"You are alice (person id {alice}).")
    row = inbox(hub, receipt.inbox_id)
    assert (row.status, row.anima, row.person_id) == ("done", None, alice)
    await settle(hub)
    assert rows(hub, Turn, col(Turn.id).is_not(None)) == []
    assert rows(hub, DeliveryRow, col(DeliveryRow.id).is_not(None)) == []


async def test_a_redelivered_command_runs_once(hub: Hub) -> None:
    first = await hub.port.receive(cmd("/anima pause aria", event_id="slack-retry-1"))
    again = await hub.port.receive(cmd("/anima pause aria", event_id="slack-retry-1"))

    assert first.reply is not None and first.reply.startswith("aria is paused")
    assert again.duplicate and again.inbox_id == first.inbox_id
    assert again.reply == "Already done: this command was run when it first arrived."
    assert [e.action for e in rows(hub, AuditEntry, col(AuditEntry.id).is_not(None))] == [
        "anima.pause"
    ]


async def test_a_refusal_reaches_the_sender_and_the_audit_log(hub: Hub) -> None:
    receipt = await hub.port.receive(cmd("/anima bind aria", sender=ALICE))

    assert receipt.reply == (
        "Sorry, only hub admins can bind channels. Admins are listed in hub.toml [hub] admins."
    )
    entry = rows(hub, AuditEntry, AuditEntry.action == "denied")[0]
    assert (entry.actor, entry.where, entry.target) == (
        "web:alice",
        "web:local/general",
        "anima.bind",
    )
    assert rows(hub, ChannelBinding, col(ChannelBinding.anima).is_not(None)) == []


# --- bind / unbind -------------------------------------------------------------------------


async def test_a_direct_conversation_is_not_bound_and_says_how_to_switch(hub: Hub) -> None:
    """It answered "now bound to kai", and the Anima last talked with went on answering."""
    said = await hub.port.receive(cmd("/anima bind kai", address=DM))
    assert said.reply is not None and said.reply.startswith("A direct conversation is not bound")
    assert 'Name kai in a message ("kai, …")' in said.reply
    assert rows(hub, ChannelBinding, col(ChannelBinding.anima).is_not(None)) == []


async def test_bind_routes_unaddressed_channel_messages_and_unbind_stops_it(hub: Hub) -> None:
    chatter = msg("meeting notes are up", address=GENERAL, addressed=False)
    before = await hub.port.receive(chatter)
    await settle(hub)
    assert inbox(hub, before.inbox_id).status == "ignored"

    bound = await hub.port.receive(cmd("/anima bind aria"))
    assert bound.reply == "This channel is now bound to aria: it answers messages here."
    routed = await hub.port.receive(msg("who has the numbers?", address=GENERAL, addressed=False))
    await settle(hub)

    row = inbox(hub, routed.inbox_id)
    assert (row.status, row.anima) == ("done", "aria")
    replies = rows(hub, DeliveryRow, DeliveryRow.kind == "reply")
    assert [(d.anima, d.address, d.status) for d in replies] == [
        ("aria", "web:local/general", "sent")
    ]

    unbound = await hub.port.receive(cmd("/anima unbind"))
    assert unbound.reply == "This channel is no longer bound to aria."
    after = await hub.port.receive(msg("anyone?", address=GENERAL, addressed=False))
    await settle(hub)
    assert inbox(hub, after.inbox_id).status == "ignored"
    assert [
        (e.action, e.actor) for e in rows(hub, AuditEntry, col(AuditEntry.id).is_not(None))
    ] == [
        ("anima.bind", "web:root"),
        ("anima.unbind", "web:root"),
    ]


# --- pause / resume ------------------------------------------------------------------------


async def test_pause_holds_messages_across_a_restart_and_resume_answers_them_in_order(
    settings: Settings,
) -> None:
    first = Hub(settings)
    await first.start()
    add_demo_animas(first)
    try:
        await first.port.receive(cmd("/anima pause aria"))
        one = await first.port.receive(msg("first question", mentions=("aria",)))
        two = await first.port.receive(msg("second question", mentions=("aria",)))
        kai = await first.port.receive(msg("kai, are you there?", mentions=("kai",)))
        await settle(first)

        alice = first.identity.resolve(ALICE).id
        for receipt in (one, two):
            row = inbox(first, receipt.inbox_id)
            assert (row.status, row.anima, row.person_id) == (InboxStatus.HELD, "aria", alice)
        assert inbox(first, kai.inbox_id).status == "done"  # only aria is paused
        notices = rows(first, DeliveryRow, DeliveryRow.kind == "notice")
        assert [(n.text, n.address, n.status) for n in notices] == [
            (paused_notice("aria"), str(DM), "sent")  # told once, for two messages
        ]
        assert user_turns(first, "aria") == []
        listed = await first.port.receive(cmd("/anima status aria"))
        assert listed.reply is not None and "inbox: 0 pending, 2 held" in listed.reply
    finally:
        await first.stop()

    again = Hub(settings)
    await again.start()  # recovery runs here: held rows must stay held
    try:
        assert again.dispatcher.recover() == 0
        await settle(again)
        assert inbox(again, one.inbox_id).status == InboxStatus.HELD
        assert inbox(again, two.inbox_id).status == InboxStatus.HELD
        assert user_turns(again, "aria") == []

        resumed = await again.port.receive(cmd("/anima resume aria"))
        assert resumed.reply == "aria is running again; 2 held messages are being answered."
        await settle(again)

        assert inbox(again, one.inbox_id).status == "done"
        assert inbox(again, two.inbox_id).status == "done"
        assert user_turns(again, "aria") == ["first question", "second question"]
        replies = rows(again, DeliveryRow, DeliveryRow.kind == "reply", DeliveryRow.anima == "aria")
        assert sorted(d.inbox_id for d in replies) == sorted([one.inbox_id, two.inbox_id])
        assert len(rows(again, DeliveryRow, DeliveryRow.kind == "notice")) == 1
    finally:
        await again.stop()


async def test_a_message_already_queued_when_paused_is_held_too(hub: Hub) -> None:
    """The runtime asks before every turn, so a job submitted before the pause (or by
    recovery, or a retry) is held, not answered."""
    row, _ = hub.ingress.accept(msg("queued before the pause", mentions=("aria",)))
    await hub.port.receive(cmd("/anima pause aria"))
    await hub.runtime.handle(TurnJob(row.id, "aria", row.conversation, None))

    assert inbox(hub, row.id).status == InboxStatus.HELD
    assert user_turns(hub, "aria") == []


async def test_an_interrupted_command_is_not_run_or_routed_by_recovery(
    settings: Settings,
) -> None:
    first = Hub(settings)
    await first.start()
    add_demo_animas(first)
    # Accepted, then the process "dies" before the command runs.
    row, _ = first.ingress.accept(cmd("/anima bind aria"))
    await first.stop()

    again = Hub(settings)
    await again.start()
    try:
        await settle(again)
        stored = inbox(again, row.id)
        assert stored.status == "failed"
        assert stored.error is not None and "send it again" in stored.error
        assert rows(again, ChannelBinding, col(ChannelBinding.anima).is_not(None)) == []
        assert rows(again, Turn, col(Turn.id).is_not(None)) == []
    finally:
        await again.stop()


# --- the web chat and the REST API ---------------------------------------------------------


def sse_events(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


async def test_typing_whoami_in_the_web_chat_gets_the_answer(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    # The person of the account `[hub] admins` names (web:root), by id: a name picks no one.
    root = hub.identity.resolve(ROOT).id
    response = await client.post(
        "/api/chat/aria", json={"message": "/whoami", "conversation_id": "s1", "user": root}
    )

    assert response.status_code == 200
    events = sse_events(response.text)
    assert [e["type"] for e in events] == ["text", "done"]
    assert events[0]["text"].startswith(f"You are root (person id {root}).")
    assert "roles: admin (you are a hub admin)" in events[0]["text"]
    await settle(hub)
    assert rows(hub, Turn, col(Turn.id).is_not(None)) == []


async def test_an_ordinary_slash_text_in_the_web_chat_is_a_message(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    response = await client.post(
        "/api/chat/aria",
        json={"message": "/etc/hosts looks wrong", "conversation_id": "s1", "user": "alice"},
    )
    assert sse_events(response.text)[-1] == {"type": "done"}
    assert user_turns(hub, "aria") == ["/etc/hosts looks wrong"]


async def test_a_paused_anima_tells_the_web_chat(client: httpx.AsyncClient, hub: Hub) -> None:
    await hub.port.receive(cmd("/anima pause aria"))
    response = await client.post(
        "/api/chat/aria", json={"message": "hello?", "conversation_id": "s1", "user": "alice"}
    )
    assert sse_events(response.text) == [{"type": "error", "message": paused_notice("aria")}]


async def test_a_command_posted_to_a_web_channel_binds_it(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    root = hub.identity.resolve(ROOT).id  # as above: the admin account's person, by id
    response = await client.post(
        "/api/channels/general/posts",
        json={"text": "/anima bind kai", "user": root, "message_id": "post-1"},
    )
    assert response.status_code == 202
    assert response.json()["reply"] == (
        "This channel is now bound to kai: it answers messages here."
    )
    with hub.db.session() as session:
        binding = session.get(ChannelBinding, "web:local/general")
    assert binding is not None and binding.anima == "kai"
    redelivered = await client.post(
        "/api/channels/general/posts",
        json={"text": "/anima bind kai", "user": root, "message_id": "post-1"},
    )
    assert redelivered.json()["duplicate"] is True
    assert len(rows(hub, AuditEntry, AuditEntry.action == "anima.bind")) == 1
    # As on Slack, neither the command nor its answer is posted: only its sender saw them.
    posts = (await client.get("/api/channels/general/posts")).json()["posts"]
    assert not [p for p in posts if "bind" in p["text"] or "bound to kai" in p["text"]]


async def test_the_animas_api_shows_paused(client: httpx.AsyncClient, hub: Hub) -> None:
    await hub.port.receive(cmd("/anima pause kai"))
    listing = {a["name"]: a["paused"] for a in (await client.get("/api/animas")).json()}
    assert listing == {"aria": False, "kai": True, "mika": False}
    assert (await client.get("/api/animas/kai")).json()["paused"] is True
