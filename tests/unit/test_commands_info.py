"""The read-only commands: /anima list, /anima status and /whoami, and what each shows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hub.delivery.targets import DirectTarget, parse_target
from hub.messages import Address, AddressKind, DeliveryKind, DeliveryStatus, PlatformUser
from hub.store.models import DeliveryRow, Identity, InboxStatus, Turn
from tests.unit.commands_helpers import (
    ALICE,
    CHANNEL,
    OTHER,
    ROOT,
    Parts,
    audit,
    inbox_row,
    run,
    serial,
)

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
                    id=f"d-{next(serial)}",
                    idempotency_key=f"k-{next(serial)}",
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
