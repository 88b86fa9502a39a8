"""The Telegram adapter beyond the contract suite, with python-telegram-bot against the fake
Bot API (animahub_kit/fakes/telegram_server.py) and a real hub
(animahub_kit/contract/telegram_harness.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlmodel import select

from adapters.telegram import TelegramSettings
from adapters.telegram.render import to_html
from animahub_kit.contract.harness import eventually
from animahub_kit.contract.telegram_harness import (
    BOT_ID,
    BOT_NAME,
    CHANNELS,
    PEOPLE,
    SECRET,
    TOKEN,
    TelegramHarness,
    open_harness,
    populate,
)
from animahub_kit.fakes.telegram_server import FakeTelegram, PostedMessage
from hub.adapter import OutcomeUnknown, PlatformState, RateLimited
from hub.messages import Address, AddressKind, DeliveryKind, OutboundChunk
from hub.store.models import DeliveryRow, InboxItem

GENERAL, RANDOM = CHANNELS["general"], CHANNELS["random"]
ALICE, BOB = PEOPLE["alice"], PEOPLE["bob"]


def rows(h: TelegramHarness) -> list[InboxItem]:
    with h.hub.db.session() as session:
        return list(session.exec(select(InboxItem)).all())


def row_of(h: TelegramHarness, event_id: str) -> InboxItem | None:
    return next((r for r in rows(h) if r.event_id == event_id), None)


async def settled(h: TelegramHarness, event_id: str) -> InboxItem:
    def done() -> InboxItem | None:
        row = row_of(h, event_id)
        return row if row is not None and row.status not in ("received", "processing") else None

    row: InboxItem = await eventually(done)
    return row


async def posted(h: TelegramHarness, needle: str) -> PostedMessage:
    found: PostedMessage = await eventually(
        lambda: next((m for m in h.fake.messages if needle in m.text), None)
    )
    return found


def count(h: TelegramHarness, needle: str) -> int:
    return sum(needle in m.text for m in h.fake.messages)


# --- long polling: the offset -------------------------------------------------------------


async def test_polling_offset_survives_a_restart_with_nothing_lost_or_repeated(
    tmp_path: Path,
) -> None:
    async with FakeTelegram(token=TOKEN, bot_id=BOT_ID, username=BOT_NAME) as fake:
        populate(fake)
        async with open_harness(tmp_path, webhook=False, fake=fake) as h:
            first = await h.dm("alice", "before the restart")
            await posted(h, "echo: before the restart")
            saved = h.hub.port.load_cursor("telegram:offset")
            assert saved == str(h.updates[first.event_id] + 1)
        # While the hub is down: one new message, and the last one again (its confirmation
        # was lost, as after a crash between storing it and the next poll).
        await fake.push("message", fake.message(BOB, BOB, "while it was down"))
        await fake.redeliver(h.updates[first.event_id])
        async with open_harness(tmp_path, webhook=False, fake=fake) as again:
            await posted(again, "echo: while it was down")
            polls = fake.calls_of("getUpdates")
            assert polls[-1].params["offset"] >= int(saved)
            assert any(p.params.get("offset") == int(saved) for p in polls)
            await again.dm("carol", "marker")
            await posted(again, "echo: marker")
            assert count(again, "echo: before the restart") == 1
            assert count(again, "echo: while it was down") == 1
            assert len([r for r in rows(again) if r.text == "before the restart"]) == 1
        assert fake.pending() == []  # everything confirmed


async def test_a_409_conflict_is_reported_once_and_polling_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_harness(tmp_path, webhook=False) as h:
        h.adapter.poll_backoff_s = (0.05, 0.2)
        caplog.set_level(logging.WARNING)
        h.fake.conflict(4)
        await h.fake.push("message", h.fake.message(ALICE, ALICE, "after the conflict"))

        def down() -> bool:
            status = h.hub.platforms.status()["telegram"]
            return status.state is PlatformState.DOWN and "409" in status.reason

        await eventually(down)
        await posted(h, "echo: after the conflict")
        await eventually(lambda: h.hub.platforms.status()["telegram"].state is PlatformState.UP)
        lines = [r for r in caplog.records if "409" in r.getMessage()]
        assert len(lines) == 1, [r.getMessage() for r in lines]
        assert "another program is polling" in lines[0].getMessage()
        gets = h.fake.calls_of("getUpdates")
        assert len(gets) < 20  # a bounded backoff, not a tight loop


async def test_a_revoked_token_while_polling_is_reported_unauthorized(tmp_path: Path) -> None:
    async with open_harness(tmp_path, webhook=False) as h:
        h.fake.fail("getUpdates", 401, "Unauthorized", times=100)
        await eventually(
            lambda: h.hub.platforms.status()["telegram"].state is PlatformState.UNAUTHORIZED
        )


# --- start --------------------------------------------------------------------------------


async def test_a_wrong_token_is_unauthorized_and_the_hub_runs_on(tmp_path: Path) -> None:
    async with open_harness(tmp_path, token="123456:wrong") as h:
        await eventually(
            lambda: h.hub.platforms.status()["telegram"].state is PlatformState.UNAUTHORIZED
        )
        assert h.fake.calls_of("getMe")


async def test_the_platform_down_at_start_is_retried_until_it_is_up(tmp_path: Path) -> None:
    async with open_harness(tmp_path, platform_down=True) as h:
        assert h.hub.platforms.status()["telegram"].state is not PlatformState.UP
        await h.platform_up()
        await eventually(lambda: h.adapter.running, timeout_s=15)
        await h.dm("alice", "now you are up")
        await posted(h, "echo: now you are up")


async def test_start_registers_commands_and_the_webhook_with_its_secret(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        commands = [c["command"] for c in h.fake.commands]
        assert commands == [
            "anima",
            "whoami",
            "web",
            "link",
            "unlink",
            "forget_me",
            "share",
            "start",
        ]
        hook = h.fake.calls_of("setWebhook")[-1].params
        assert hook["url"] == "https://hub.example.com/webhooks/telegram"
        assert hook["secret_token"] == SECRET
        assert hook["allowed_updates"] == ["message", "edited_message"]
    async with open_harness(tmp_path / "polling", webhook=False) as h:
        assert h.fake.calls_of("deleteWebhook") and not h.fake.calls_of("setWebhook")


def test_settings_need_a_token_and_a_webhook_secret() -> None:
    with pytest.raises(ValueError, match="ANIMAHUB_TELEGRAM__BOT_TOKEN"):
        TelegramSettings(enabled=True)
    # A mistyped token is named at start, not retried as an unreachable Bot API.
    for typo in ("bad", "123456", "123456:", "abc:DEF", "123456:ABC DEF", " 123456:ABC"):
        with pytest.raises(ValueError, match="not a bot token"):
            TelegramSettings(enabled=True, bot_token=typo)
    assert TelegramSettings(enabled=True, bot_token="123456789:AAHd-x_9").bot_token is not None
    with pytest.raises(ValueError, match="webhook_secret"):
        TelegramSettings(enabled=True, bot_token="1:x", public_url="https://h.example.com")
    with pytest.raises(ValueError, match="A-Z"):
        TelegramSettings(
            enabled=True, bot_token="1:x", public_url="https://h", webhook_secret="no spaces"
        )


# --- webhook ------------------------------------------------------------------------------


@pytest.mark.parametrize("secret", ["", "wrong-secret", SECRET + "x"])
async def test_a_webhook_without_the_secret_is_refused_with_nothing_stored(
    tmp_path: Path, secret: str
) -> None:
    async with open_harness(tmp_path) as h:
        before = len(rows(h))
        update = h.fake.update("message", h.fake.message(ALICE, ALICE, "let me in"))
        assert await h.fake.deliver(update, secret=secret) == 401
        await h.dm("carol", "marker")
        await posted(h, "echo: marker")
        assert len(rows(h)) == before + 1  # the marker only
        assert count(h, "let me in") == 0


async def test_a_webhook_body_that_is_no_update_is_a_400(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        assert await h.fake.deliver({"update_id": "x"}) == 400


# --- groups, topics, replies --------------------------------------------------------------


async def test_forum_topics_are_threads_and_the_general_topic_takes_none(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        general = await h.say("alice", "general", "in General", mention=True)
        reply = await posted(h, "echo: in General")
        assert reply.thread_id is None and reply.reply_to == int(general.message_id)
        sends = [c for c in h.fake.calls_of("sendMessage") if "in General" in c.params["text"]]
        assert all("message_thread_id" not in c.params for c in sends)

        topic = await h.say("alice", "general", "in a topic", mention=True, thread="77")
        row = await settled(h, topic.event_id)
        assert row.address == f"telegram:{BOT_ID}/{GENERAL}#77"
        assert row.address_kind == "group"
        assert (await posted(h, "echo: in a topic")).thread_id == 77


async def test_group_chatter_is_kept_and_only_mentions_replies_and_commands_answered(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        chatter = await h.say("bob", "random", "lunch anyone?")
        assert (await settled(h, chatter.event_id)).status == "ignored"

        asked = await h.say("bob", "random", "aria, what is up?", mention=True)
        await settled(h, asked.event_id)
        answer = await posted(h, "echo: aria, what is up?")
        bot_message = h.fake.bot_message_json(answer)
        follow = h.fake.message(BOB, RANDOM, "and then?", reply_to=bot_message)
        sent = await h.speak(follow)
        row = await settled(h, sent.event_id)
        assert row.status == "done" and row.anima == "aria"  # the Anima that wrote it

        entity = {
            "type": "text_mention",
            "offset": 0,
            "length": 3,
            "user": {"id": BOT_ID, "is_bot": True, "first_name": "AnimaHub"},
        }
        named = h.fake.message(BOB, RANDOM, "Bot please", extra={"entities": [entity]})
        sent = await h.speak(named)
        row = await settled(h, sent.event_id)
        assert row.status == "done" and row.text == "please"

        other = await h.say("bob", "random", "/start@some_other_bot")
        await h.say("carol", "random", "marker", mention=True)
        await posted(h, "echo: marker")
        assert row_of(h, other.event_id) is None  # a command for another bot is not ours


async def test_a_message_in_a_bound_channel_without_a_mention_is_not_addressed(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        sent = await h.say("bob", "random", "just talking")
        row = await settled(h, sent.event_id)
        assert row.status == "ignored"  # not addressed: the hub's binding would answer it


# --- commands -----------------------------------------------------------------------------


async def test_commands_are_answered_privately_or_in_the_group_when_no_dm_is_possible(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        await h.dm("alice", "/whoami")
        private = await posted(h, f"telegram:{ALICE}")
        assert private.chat_id == ALICE

        sent = await h.say("bob", "random", f"/whoami@{BOT_NAME}")
        answer = await posted(h, f"telegram:{BOB}")
        assert answer.chat_id == BOB  # the sender's private chat, not the group
        row = await settled(h, sent.event_id)
        assert row.text == "/whoami"

        h.fake.fail("sendMessage", 403, "Forbidden: bot can't initiate conversation with a user")
        sent = await h.say("carol", "random", "/whoami", thread=None)
        fallback = await posted(h, f"telegram:{PEOPLE['carol']}")
        assert fallback.chat_id == RANDOM and fallback.reply_to == int(sent.message_id)

        await h.dm("alice", "/start")
        welcome = await posted(h, "Welcome to AnimaHub")
        assert f"telegram:{ALICE}" in welcome.text


# --- attachments --------------------------------------------------------------------------


async def test_attachments_are_recorded_with_their_file_ids_and_nothing_downloaded(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        photo = [
            {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90},
            {
                "file_id": "large",
                "file_unique_id": "l",
                "width": 900,
                "height": 900,
                "file_size": 81234,
            },
        ]
        message = h.fake.message(ALICE, ALICE, "look", caption=True, extra={"photo": photo})
        sent = await h.speak(message)
        row = await settled(h, sent.event_id)
        assert row.text == "look"
        assert row.attachments == [
            {
                "name": "photo.jpg",
                "url": "telegram-file:large",
                "content_type": "image/jpeg",
                "size": 81234,
            }
        ]
        voice = {
            "file_id": "v1",
            "file_unique_id": "v",
            "duration": 3,
            "mime_type": "audio/ogg",
            "file_size": 2048,
        }
        sent = await h.speak(h.fake.message(ALICE, ALICE, caption=True, extra={"voice": voice}))
        row = await settled(h, sent.event_id)
        assert row.attachments[0]["url"] == "telegram-file:v1" and row.text == ""
        assert not h.fake.calls_of("getFile")


# --- outbound -----------------------------------------------------------------------------


async def test_html_telegram_refuses_is_sent_again_as_plain_text(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.fail("sendMessage", 400, "Bad Request: can't parse entities: unsupported tag")
        h.fake.fail("editMessageText", 400, "Bad Request: can't parse entities: bad")
        await h.dm("alice", "**bold** please")
        message = await posted(h, "echo: bold please")
        assert message.html is None and message.entities == []  # the plain resend
        row = await settled(h, f"{ALICE}:1")
        assert row.status == "done"


async def test_a_429_holds_that_chat_only(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        adapter = h.adapter
        group = Address("telegram", str(BOT_ID), str(RANDOM), None, AddressKind.GROUP)
        dm = Address("telegram", str(BOT_ID), str(ALICE), None, AddressKind.DM)
        h.fake.rate_limit("sendMessage", 1, 30, chat_id=RANDOM)
        with pytest.raises(RateLimited) as limited:
            await adapter.send(chunk(group, "first"))
        assert limited.value.retry_after == 30
        calls = len(h.fake.calls_of("sendMessage"))
        with pytest.raises(RateLimited):  # held: Telegram is not asked again meanwhile
            await adapter.send(chunk(group, "second"))
        assert len(h.fake.calls_of("sendMessage")) == calls
        assert await adapter.send(chunk(dm, "another chat"))  # not held


async def test_a_send_whose_answer_never_came_is_not_repeated(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        dm = Address("telegram", str(BOT_ID), str(ALICE), None, AddressKind.DM)
        h.fake.drop_next_send_response()
        with pytest.raises(OutcomeUnknown):
            await h.adapter.send(chunk(dm, "maybe sent"))
        assert count(h, "maybe sent") == 1


async def test_a_proactive_post_goes_to_the_chat_and_topic_without_a_reply(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.add_topic(GENERAL, 5)
        topic = Address("telegram", str(BOT_ID), str(GENERAL), "5", AddressKind.GROUP)
        message_id = await h.adapter.send(chunk(topic, "**heartbeat**", reply_to=None))
        message = await posted(h, "heartbeat")
        assert str(message.message_id) == message_id
        assert message.thread_id == 5 and message.reply_to is None
        assert message.entities == [{"type": "bold", "offset": 0, "length": 9}]
        with h.hub.db.session() as session:
            assert session.exec(select(DeliveryRow)).first() is None  # sent directly here


def chunk(address: Address, markdown: str, reply_to: str | None = None) -> OutboundChunk:
    return OutboundChunk(
        delivery_id="d1",
        index=0,
        count=1,
        address=address,
        text=to_html(markdown),
        anima="mika",
        kind=DeliveryKind.HEARTBEAT,
        answers=None,
        reply_to=reply_to,
        idempotency_key="k:0",
    )


async def test_polling_survives_a_hub_that_cannot_store_an_update(tmp_path: Path) -> None:
    from tests.unit.test_supervise import table_gone

    async with open_harness(tmp_path, webhook=False) as h:
        h.adapter.poll_backoff_s = (0.05, 0.2)
        with table_gone(h.hub.db, "inbox"):  # the hub's database refuses the update
            await h.fake.push("message", h.fake.message(ALICE, ALICE, "kept for later"))

            def down() -> bool:
                status = h.hub.platforms.status()["telegram"]
                return status.state is PlatformState.DOWN and "not be stored" in status.reason

            await eventually(down)
        await posted(h, "echo: kept for later")  # the same update, fetched again and stored
        await eventually(lambda: h.hub.platforms.status()["telegram"].state is PlatformState.UP)
        assert count(h, "echo: kept for later") == 1
