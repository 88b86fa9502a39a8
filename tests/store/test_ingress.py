"""Ingress: every inbound is persisted once per (platform, sender, event id), whole and
size-checked."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from sqlmodel import func, select

from hub.adapter import MessageTooLarge
from hub.inbound.ingress import Ingress, from_row
from hub.messages import Address, AddressKind, Attachment, Inbound, PlatformUser
from hub.store.db import Database
from hub.store.models import InboxItem

LIMIT = 1024


@pytest.fixture
def ingress(db: Database) -> Ingress:
    return Ingress(db, max_message_bytes=LIMIT)


def inbound(event_id: str = "ev-1", text: str = "hello", platform: str = "slack") -> Inbound:
    return Inbound(
        event_id=event_id,
        address=Address(platform, "T1", "C1"),
        sender=PlatformUser(platform, "U1", "Ada"),
        text=text,
    )


def rich_inbound() -> Inbound:
    return Inbound(
        event_id="1700000000.000100",
        address=Address("slack", "T1", "D9", "1700000000.000001", AddressKind.DM),
        sender=PlatformUser("slack", "U123", "Ada Lovelace", is_bot=True),
        text="héllo @aria — 日本語 😀",
        mentions=("aria", "kai"),
        reply_to="1699999999.000009",
        attachments=(
            Attachment("plot.png", "https://files/plot.png", "image/png", 2048),
            Attachment("notes.txt", "https://files/notes.txt"),
        ),
        sent_at=datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
        raw={"type": "message", "nested": {"list": [1, "two", None, True]}, "ü": "ß"},
    )


def inbox_rows(db: Database) -> list[InboxItem]:
    with db.session() as session:
        return list(session.exec(select(InboxItem)).all())


def inbox_count(db: Database) -> int:
    with db.session() as session:
        return int(session.exec(select(func.count()).select_from(InboxItem)).one())


def test_accept_persists_every_field(db: Database, ingress: Ingress) -> None:
    message = rich_inbound()
    row, duplicate = ingress.accept(message)
    assert duplicate is False

    [stored] = inbox_rows(db)
    assert stored.id == row.id
    assert stored.platform == "slack"
    assert stored.event_id == "1700000000.000100"
    assert stored.address == "slack:T1/D9#1700000000.000001"
    assert stored.conversation == "slack:T1/D9#1700000000.000001"
    assert stored.channel_key == "slack:T1/D9"
    assert stored.address_kind == "dm"
    assert stored.sender_key == "slack:U123"
    assert stored.sender_name == "Ada Lovelace"
    assert stored.sender_is_bot is True
    assert stored.text == "héllo @aria — 日本語 😀"
    assert stored.mentions == ["aria", "kai"]
    assert stored.reply_to == "1699999999.000009"
    assert stored.attachments == [
        {
            "name": "plot.png",
            "url": "https://files/plot.png",
            "content_type": "image/png",
            "size": 2048,
        },
        {"name": "notes.txt", "url": "https://files/notes.txt", "content_type": "", "size": None},
    ]
    assert stored.raw == {"type": "message", "nested": {"list": [1, "two", None, True]}, "ü": "ß"}
    assert stored.status == "received"
    assert stored.attempts == 0


def test_from_row_rebuilds_an_equal_inbound(db: Database, ingress: Ingress) -> None:
    """After a restart the inbound is rebuilt from the stored row, not from memory."""
    message = rich_inbound()
    ingress.accept(message)
    [stored] = inbox_rows(db)
    rebuilt = from_row(stored)
    assert rebuilt.address == message.address
    assert rebuilt.address.kind is AddressKind.DM
    assert rebuilt.sender == message.sender
    assert rebuilt.attachments == message.attachments
    assert rebuilt.sent_at == message.sent_at
    assert rebuilt == message


def test_from_row_of_the_returned_row_is_equal(ingress: Ingress) -> None:
    message = rich_inbound()
    row, _ = ingress.accept(message)
    assert from_row(row) == message


def test_redelivery_returns_the_first_row_as_duplicate(db: Database, ingress: Ingress) -> None:
    first, first_duplicate = ingress.accept(inbound(text="first"))
    again, duplicate = ingress.accept(inbound(text="second copy"))
    assert first_duplicate is False
    assert duplicate is True
    assert again.id == first.id
    assert again.text == "first"
    assert inbox_count(db) == 1


def test_same_event_id_on_another_platform_is_not_a_duplicate(
    db: Database, ingress: Ingress
) -> None:
    slack, slack_dup = ingress.accept(inbound(event_id="42", platform="slack"))
    discord, discord_dup = ingress.accept(inbound(event_id="42", platform="discord"))
    assert (slack_dup, discord_dup) == (False, False)
    assert slack.id != discord.id
    assert sorted(row.platform for row in inbox_rows(db)) == ["discord", "slack"]


def test_text_exactly_at_the_byte_limit_is_accepted(db: Database, ingress: Ingress) -> None:
    two_bytes = "é" * (LIMIT // 2)  # 512 characters, 1024 bytes
    four_bytes = "😀" * (LIMIT // 4)  # 256 characters, 1024 bytes
    for index, text in enumerate((two_bytes, four_bytes)):
        assert len(text.encode("utf-8")) == LIMIT
        row, duplicate = ingress.accept(inbound(event_id=f"ok-{index}", text=text))
        assert duplicate is False
        assert row.text == text
    assert inbox_count(db) == 2


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("é" * (LIMIT // 2) + "a", id="two-byte"),
        pytest.param("日" * (LIMIT // 3) + "é", id="three-byte"),  # 342 chars, 1025 bytes
        pytest.param("😀" * (LIMIT // 4) + "a", id="four-byte"),
    ],
)
def test_text_one_byte_over_the_limit_is_refused(db: Database, ingress: Ingress, text: str) -> None:
    size = len(text.encode("utf-8"))
    assert size == LIMIT + 1
    assert len(text) < LIMIT  # only the UTF-8 byte count is over
    with pytest.raises(MessageTooLarge) as caught:
        ingress.accept(inbound(text=text))
    assert caught.value.size == size
    assert caught.value.limit == LIMIT
    assert inbox_count(db) == 0


def test_concurrent_accepts_of_one_event_make_one_row(db: Database, ingress: Ingress) -> None:
    threads = 8
    barrier = threading.Barrier(threads)
    message = inbound(event_id="race")

    def accept() -> tuple[str, bool]:
        barrier.wait()
        row, duplicate = ingress.accept(message)
        return row.id, duplicate

    with ThreadPoolExecutor(max_workers=threads) as pool:
        results = [future.result() for future in [pool.submit(accept) for _ in range(threads)]]

    rows = inbox_rows(db)
    assert len(rows) == 1
    assert [duplicate for _, duplicate in results].count(False) == 1
    assert {row_id for row_id, _ in results} == {rows[0].id}


def test_another_sender_with_the_same_event_id_is_a_new_event(
    db: Database, ingress: Ingress
) -> None:
    # A web client chooses its message_id: Bob sending Ada's must not find Ada's row (and
    # have her stored reply replayed to him). Who sent it is part of the event's identity.
    ada = Inbound(
        event_id="m-1",
        address=Address("web", "w", "dm:aria:ada"),
        sender=PlatformUser("web", "ada", "Ada"),
        text="my salary is 9000",
    )
    bob = Inbound(
        event_id="m-1",
        address=Address("web", "w", "dm:aria:bob"),
        sender=PlatformUser("web", "bob", "Bob"),
        text="what did I say?",
    )
    first, _ = ingress.accept(ada)
    second, duplicate = ingress.accept(bob)
    assert not duplicate and second.id != first.id
    assert (second.sender_key, second.text) == ("web:bob", "what did I say?")
    again, duplicate = ingress.accept(bob)
    assert duplicate and again.id == second.id  # Bob's own redelivery is still one row
    assert inbox_count(db) == 2
