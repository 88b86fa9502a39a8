"""Webhooks as LINE sends them: signatures, redelivery, groups and rooms, profiles, media,
the loading animation, commands, and a platform that is down or refuses the token."""

from __future__ import annotations

from pathlib import Path

from adapters.line import LineAdapter, LineSettings
from animahub_kit.contract.harness import eventually
from animahub_kit.contract.line_harness import BOT_USER, CHANNELS, open_harness, user_id
from hub.adapter import Adapter, PlatformState
from tests.adapters.line.helpers import inbox_count, inbox_row, reply_to, settled_row


async def test_unsigned_and_forged_webhooks_are_refused_before_anything_is_stored(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        before = inbox_count(h)
        event = h.fake.text_event(user_id("alice"), "let me in")
        assert (await h.fake.unsigned(event)).status == 401
        assert (await h.fake.forged(event)).status == 401
        assert inbox_count(h) == before
        assert h.fake.calls_to("profile") == []  # not even a profile lookup
        # LINE's Verify button: a signed request without events
        assert (await h.fake.deliver()).status == 200


async def test_a_redelivery_never_seen_is_answered_once_by_push(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        event = h.fake.text_event(user_id("alice"), "lost the first time")
        h.fake._events[event["webhookEventId"]] = event  # the first delivery never arrived
        assert (await h.fake.redeliver(event["webhookEventId"])).status == 200
        row = await settled_row(h, event["webhookEventId"])
        assert row.status == "done"
        await reply_to(h, "echo: lost the first time")
        assert h.fake.calls_to("reply") == []  # its reply token may be stale: push
        assert [m.via for m in h.fake.messages] == ["push"]
        assert (await h.fake.redeliver(event["webhookEventId"])).status == 200
        await h.dm("bob", "marker")
        await reply_to(h, "echo: marker")
        assert len([t for t in h.fake.texts() if "lost the first time" in t]) == 1


async def test_a_room_mention_is_answered_in_the_room_with_the_member_profile(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        room = "R" + "42" * 16
        h.fake.add_group(room, [user_id("alice"), user_id("bob")], room=True)
        event = h.fake.text_event(
            user_id("alice"),
            "aria, thanks 🎉",
            chat=room,
            mention_bot=True,
            mention_users=(user_id("bob"),),
        )
        await h.fake.deliver(event)
        row = await settled_row(h, event["webhookEventId"])
        assert (row.address, row.address_kind) == (f"line:{BOT_USER}/{room}", "group")
        assert row.text == "aria, thanks 🎉 @Bob Builder"  # the bot's mention cut, Bob's kept
        assert row.anima == "aria" and row.addressed
        assert row.sender_name == "Alice Liddell"
        posted = await reply_to(h, "echo: aria, thanks 🎉")
        assert posted.channel == room
        assert [c.path for c in h.fake.calls_to("member")] == [
            f"/v2/bot/room/{room}/member/{user_id('alice')}"
        ]
        assert h.fake.loading == []  # LINE shows it in 1:1 chats only


async def test_a_mention_after_surrogate_pairs_is_cut_at_the_right_place(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        event = h.fake.text_event(user_id("bob"), "x", chat=CHANNELS["general"])
        label = f"@{h.fake.bot_name}"
        text = f"😀😀 {label} @kai status?"
        event["message"]["text"] = text
        event["message"]["mention"] = {
            "mentionees": [{"index": 5, "length": len(label), "type": "user", "isSelf": True}]
        }
        await h.fake.deliver(event)
        row = await settled_row(h, event["webhookEventId"])
        assert row.text == "😀😀 @kai status?"  # LINE counts in UTF-16: 😀 is two
        assert row.anima == "kai"


async def test_group_chatter_is_kept_unaddressed(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        sent = await h.say("bob", "general", "lunch?")
        row = await settled_row(h, sent)
        assert (row.addressed, row.status) == (False, "ignored")


async def test_display_names_are_cached_and_refreshed_hourly(tmp_path: Path) -> None:
    now = [1000.0]

    def build(section: LineSettings) -> Adapter:
        return LineAdapter(section, clock=lambda: now[0])

    async with open_harness(tmp_path, factory=build) as h:
        first = await h.dm("alice", "one")
        second = await h.dm("alice", "two")
        assert (await settled_row(h, second)).sender_name == "Alice Liddell"
        assert len(h.fake.calls_to("profile")) == 1  # asked once for both
        h.fake.rename_user(user_id("alice"), "Alice L.")
        now[0] += 3601
        third = await h.dm("alice", "three")
        assert (await settled_row(h, third)).sender_name == "Alice L."
        assert len(h.fake.calls_to("profile")) == 2
        assert (await settled_row(h, first)).sender_name == "Alice Liddell"


async def test_a_dm_shows_the_loading_animation_before_the_reply(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        await h.dm("carol", "think about it")
        await reply_to(h, "echo: think about it")
        assert h.fake.loading == [{"chatId": user_id("carol"), "loadingSeconds": 60}]
        order = [c.path.rsplit("/", 1)[-1] for c in h.fake.calls if c.method == "POST"]
        assert order == ["start", "reply"]


async def test_media_are_recorded_as_attachments_without_downloading(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        image = h.fake.media_event(user_id("alice"), "image")
        document = h.fake.media_event(user_id("alice"), "file", file_name="q3.pdf", size=2048)
        assert (await h.fake.deliver(image, document)).status == 200
        image_row = await settled_row(h, image["webhookEventId"])
        file_row = await settled_row(h, document["webhookEventId"])
        image_id, file_id = image["message"]["id"], document["message"]["id"]
        assert image_row.attachments == [
            {
                "name": f"image-{image_id}",
                "url": f"line-content:{image_id}",
                "content_type": "image/*",
                "size": None,
            }
        ]
        assert [(a["name"], a["url"], a["size"]) for a in file_row.attachments] == [
            ("q3.pdf", f"line-content:{file_id}", 2048)
        ]
        assert all("/content" not in c.path for c in h.fake.calls)
        sticker = h.fake.sticker_event(user_id("alice"))
        assert (await h.fake.deliver(sticker)).status == 200
        assert inbox_row(h, sticker["webhookEventId"]) is None  # nothing to keep


async def test_a_command_is_answered_at_once_on_the_reply_token(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        sent = await h.dm("alice", "/whoami")
        row = await settled_row(h, sent)
        assert row.text == "/whoami"
        replies = h.fake.calls_to("reply")
        assert len(replies) == 1 and replies[0].status == 200
        assert user_id("alice") in h.fake.texts()[0]  # the hub's answer names the caller
        assert h.fake.calls_to("push") == [] and h.fake.loading == []


async def test_a_platform_down_at_start_is_connected_when_it_comes_up(tmp_path: Path) -> None:
    async with open_harness(tmp_path, platform_down=True) as h:
        assert h.hub.platforms.status()["line"].state is not PlatformState.UP
        await h.platform_up()
        await eventually(lambda: h.hub.platforms.ready("line"), timeout_s=15)
        assert h.adapter.bot_user_id == BOT_USER
        await h.dm("alice", "you are back")
        await reply_to(h, "echo: you are back")


async def test_a_wrong_access_token_is_reported_unauthorized(tmp_path: Path) -> None:
    async with open_harness(tmp_path, access_token="not-the-token") as h:
        status = await eventually(
            lambda: (
                (s := h.hub.platforms.status()["line"]).state is PlatformState.UNAUTHORIZED and s
            )
        )
        assert "401" in status.reason
        assert [c.status for c in h.fake.calls_to("info")] == [401]


async def test_a_message_sent_while_line_is_down_is_stored_and_answered_once_up(
    tmp_path: Path,
) -> None:
    # LINE posts webhooks whether or not the hub reached GET /v2/bot/info: refusing them
    # would lose them (redelivery is off unless turned on in LINE's console).
    async with open_harness(tmp_path, platform_down=True) as h:
        assert h.hub.platforms.status()["line"].state is not PlatformState.UP
        sent = await h.dm("alice", "are you there?")
        assert inbox_row(h, sent.event_id) is not None
        await h.platform_up()
        await eventually(lambda: h.hub.platforms.ready("line"), timeout_s=15)
        await reply_to(h, "echo: are you there?")


async def test_a_message_is_stored_while_the_access_token_is_refused(tmp_path: Path) -> None:
    async with open_harness(tmp_path, access_token="not-the-token") as h:
        await eventually(
            lambda: h.hub.platforms.status()["line"].state is PlatformState.UNAUTHORIZED
        )
        sent = await h.dm("alice", "hello?")
        row = inbox_row(h, sent.event_id)
        assert row is not None and row.text == "hello?"
