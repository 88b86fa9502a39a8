"""The Discord adapter beyond the contract suite, with discord.py against the local fake:
intents, slash commands (gateway and HTTP), reply references, per-Anima bots, ignoring our
own messages, and how delivery errors and rate limits reach the outbox."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import discord
import httpx
import pytest
from sqlmodel import select

from adapters.discord import rest
from adapters.discord.commands import NO_REPLY
from animahub_kit.contract.cases import answered_marker, reply_to, settled_row
from animahub_kit.contract.discord_harness import MESSAGES_ROUTE, DiscordHarness, open_harness
from animahub_kit.contract.harness import eventually
from animahub_kit.fakes.discord_server import FakeDiscord
from hub.adapter import PlatformState, RateLimited, Receipt
from hub.messages import (
    Address,
    AddressKind,
    Command,
    DeliveryKind,
    DeliveryStatus,
    Inbound,
    OutboundChunk,
)
from hub.store.models import DeliveryRow, InboxItem

EDIT_ROUTE = "/channels/{channel_id}/messages/{message_id}"
Receive = Callable[[Inbound], Awaitable[Receipt]]


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[DiscordHarness]:
    async with open_harness(tmp_path) as opened:
        yield opened


def record_receipts(
    h: DiscordHarness, monkeypatch: pytest.MonkeyPatch, delay_s: float = 0.0
) -> list[tuple[Inbound, Receipt]]:
    """What the hub answered the adapter; `delay_s` makes the hub slow to answer."""
    seen: list[tuple[Inbound, Receipt]] = []
    receive: Receive = h.hub.port.receive

    async def recording(inbound: Inbound) -> Receipt:
        if delay_s:
            await asyncio.sleep(delay_s)  # a slow hub, not a synchronization
        receipt = await receive(inbound)
        seen.append((inbound, receipt))
        return receipt

    monkeypatch.setattr(h.hub.port, "receive", recording)
    return seen


def inbox(h: DiscordHarness) -> list[InboxItem]:
    with h.hub.db.session() as session:
        return list(session.exec(select(InboxItem)).all())


def queue_delivery(h: DiscordHarness, address: Address, text: str, key: str) -> str:
    with h.hub.db.write() as conn:
        row = h.hub.outbox.enqueue(conn, address, text, DeliveryKind.NOTICE, "mika", key)
    return row.id


def delivery(h: DiscordHarness, delivery_id: str) -> DeliveryRow | None:
    with h.hub.db.session() as session:
        return session.get(DeliveryRow, delivery_id)


def general(h: DiscordHarness) -> Address:
    return Address("discord", h.fake.guild_id, h.fake.channel_id("general"))


def bind_option(name: str) -> list[dict[str, Any]]:
    return [{"name": "bind", "type": 1, "options": [{"name": "name", "type": 3, "value": name}]}]


# --- gateway session and commands ----------------------------------------------------------


async def test_identify_asks_for_the_message_content_intent(h: DiscordHarness) -> None:
    intents = discord.Intents._from_value(h.fake.intents())
    assert intents.message_content
    assert intents.guilds and intents.guild_messages and intents.dm_messages
    assert not intents.members and not intents.presences  # privileged, and not needed


async def test_start_fails_clearly_when_the_message_content_intent_is_not_enabled(
    tmp_path: Path,
) -> None:
    fake = FakeDiscord(message_content_enabled=False)
    async with open_harness(tmp_path, fake=fake) as h:
        status = h.hub.platforms.status()["discord"]
        assert status.state is PlatformState.UNAUTHORIZED  # a person must act: not retried
        assert "enable the Message Content intent" in status.reason
        assert status.next_retry_at is None


async def test_the_slash_commands_are_registered_at_start(h: DiscordHarness) -> None:
    (commands,) = h.fake.command_overwrites
    by_name = {command["name"]: command for command in commands}
    assert set(by_name) == {"anima", "whoami", "web", "link", "unlink", "forget-me", "share"}
    (text,) = by_name["share"]["options"]
    assert (text["name"], text["type"], text.get("required", False)) == ("text", 3, False)
    (code,) = by_name["link"]["options"]
    assert (code["name"], code["type"], code.get("required", False)) == ("code", 3, False)
    (confirm,) = by_name["forget-me"]["options"]
    assert (confirm["name"], confirm.get("required", False)) == ("confirm", False)
    assert not by_name["web"].get("options")
    (platform,) = by_name["unlink"]["options"]
    assert (platform["name"], platform["type"], platform["required"]) == ("platform", 3, True)
    subcommands = {option["name"]: option for option in by_name["anima"]["options"]}
    assert set(subcommands) == {
        *("list", "status", "bind", "unbind", "heartbeat", "pause", "resume", "approve", "tasks"),
        "delegate",
    }
    assert all(option["type"] == 1 for option in subcommands.values())
    (approve,) = subcommands["approve"]["options"]
    assert (approve["name"], approve["type"], approve["required"]) == ("code", 3, True)
    delegate = [(o["name"], o["type"], o["required"]) for o in subcommands["delegate"]["options"]]
    assert delegate == [("name", 3, True), ("task", 3, True)]
    for name in ("status", "bind", "heartbeat", "pause", "resume"):
        (option,) = subcommands[name]["options"]
        assert (option["name"], option["type"], option["required"]) == ("name", 3, True)
    assert not subcommands["list"].get("options")
    assert not subcommands["unbind"].get("options")
    assert not subcommands["tasks"].get("options")


async def test_a_slash_command_over_the_gateway_is_answered_with_the_hubs_reply(
    h: DiscordHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    receipts = record_receipts(h, monkeypatch)
    alice = h.fake.user("alice")
    channel = h.fake.channel_id("general")
    data = h.fake.interaction_payload(alice, channel, "anima", bind_option("aria"))
    await h.fake.dispatch("INTERACTION_CREATE", data)

    def answered() -> dict[str, Any] | None:
        found = [r for r in h.fake.interaction_responses if r["interaction_id"] == data["id"]]
        return found[0] if found else None

    response = await eventually(answered)
    ((inbound, receipt),) = receipts
    assert inbound.event_id == f"interaction:{data['id']}"
    assert inbound.command == Command("anima", ("bind", "aria"))
    assert inbound.text == "/anima bind aria"
    assert inbound.address == general(h)
    assert inbound.sender.user_id == alice["id"]
    assert response["type"] == 4  # CHANNEL_MESSAGE_WITH_SOURCE
    assert response["data"]["flags"] & 64  # ephemeral: only alice sees it
    assert response["data"]["content"] == (receipt.reply or NO_REPLY)


async def test_web_in_a_dm_is_answered_with_a_sign_in_link_only_its_sender_sees(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path, with_web=True) as h:
        alice = h.fake.user("alice")
        data = h.fake.interaction_payload(alice, h.fake.dm_channel(alice), "web", [])
        await h.fake.dispatch("INTERACTION_CREATE", data)
        response = await eventually(
            lambda: next(
                (r for r in h.fake.interaction_responses if r["interaction_id"] == data["id"]),
                None,
            )
        )
        assert "/signin/" in response["data"]["content"]
        assert response["data"]["flags"] & 64  # ephemeral: only alice sees her link


async def test_a_slow_command_is_deferred_then_answered_by_a_follow_up(
    h: DiscordHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    receipts = record_receipts(h, monkeypatch, delay_s=0.3)
    monkeypatch.setattr(h.adapter, "defer_after_s", 0.05)
    alice = h.fake.user("alice")
    data = h.fake.interaction_payload(alice, h.fake.dm_channel(alice), "whoami", [])
    await h.fake.dispatch("INTERACTION_CREATE", data)
    followup = await eventually(lambda: h.fake.followups)
    (response,) = h.fake.interaction_responses
    assert response["type"] == 5  # deferred: "thinking…"
    ((inbound, receipt),) = receipts
    assert inbound.address.kind is AddressKind.DM
    assert inbound.command == Command("whoami")
    assert followup[0]["method"] == "POST"
    assert followup[0]["content"] == (receipt.reply or NO_REPLY)
    assert followup[0]["flags"] & 64


# --- the HTTP interactions endpoint ----------------------------------------------------------


async def test_the_http_interactions_endpoint_verifies_and_answers(
    h: DiscordHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    receipts = record_receipts(h, monkeypatch)
    ping = {"id": "1", "application_id": h.fake.app_id, "type": 1, "token": "t", "version": 1}
    response = await h.signed(json.dumps(ping).encode())
    assert response.status_code == 200
    assert response.json() == {"type": 1}

    body = h.command_body("bob")
    response = await h.signed(body)
    assert response.status_code == 200
    ((inbound, receipt),) = receipts
    assert inbound.event_id == f"interaction:{json.loads(body)['id']}"
    assert inbound.command == Command("anima", ("list",))
    assert inbound.sender.user_id == h.fake.user("bob")["id"]
    assert inbound.address == general(h)
    assert response.json() == {
        "type": 4,
        "data": {"content": receipt.reply or NO_REPLY, "flags": 64},
    }

    assert await h.forged() == 401
    assert await h.stale() == 401
    unsigned = await h.interact(body, {"Content-Type": "application/json"})
    assert unsigned.status_code == 401
    assert (await h.signed(b"{not json")).status_code == 400
    assert len(receipts) == 1  # nothing refused reached the hub


async def test_a_slow_http_command_is_deferred_and_followed_up(
    h: DiscordHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_receipts(h, monkeypatch, delay_s=0.3)
    assert h.adapter.interactions is not None
    monkeypatch.setattr(h.adapter.interactions, "defer_after_s", 0.05)
    response = await h.signed(h.command_body())
    assert response.json() == {"type": 5, "data": {"flags": 64}}
    followup = await eventually(lambda: h.fake.followups)
    assert followup[0]["content"]
    assert f"/webhooks/{h.fake.app_id}/" in followup[0]["path"]


# --- inbound -------------------------------------------------------------------------------


async def test_our_own_messages_are_ignored_and_other_bots_are_not_answered(
    h: DiscordHarness,
) -> None:
    await h.say("alice", "general", "hello there", mention=True)
    await reply_to(h, "echo: hello there")
    bot_id = h.fake.bot["id"]
    assert any(  # the fake echoed our reply back over the gateway, as Discord does
        event == "MESSAGE_CREATE" and data["author"]["id"] == bot_id
        for event, data in h.fake.dispatched
    )
    other = h.fake.user("ci-bot", bot=True)
    data = h.fake.message_payload(
        other, h.fake.channel_id("general"), f"{h.mention()} build done", mentions=(h.fake.bot,)
    )
    sent = await h.post_message(data, h.fake.channel_id("general"), None)
    row = await settled_row(h, sent)
    assert row.status == "ignored" and row.sender_is_bot
    await answered_marker(h)
    assert not [r for r in inbox(h) if r.sender_key == f"discord:{bot_id}"]
    assert not [p for p in h.posted() if "build done" in p.text]


async def test_addressed_means_a_mention_a_reply_to_us_or_a_thread_we_are_in(
    h: DiscordHarness,
) -> None:
    root = await h.say("alice", "general", "release notes")
    assert not (await settled_row(h, root)).addressed
    quiet = await h.say("alice", "general", "anyone?", thread=root.message_id)
    assert not (await settled_row(h, quiet)).addressed  # a thread we are not in

    asked = await h.say("alice", "general", "summarize please", mention=True, thread=quiet.thread)
    posted = await reply_to(h, "echo: summarize please")
    assert (posted.channel, posted.thread) == (root.channel, root.message_id)
    follow = await h.say("alice", "general", "and shorter?", thread=asked.thread)
    follow_row = await settled_row(h, follow)
    assert follow_row.addressed  # we posted in this thread
    await reply_to(h, "echo: and shorter?")

    person = h.fake.user("bob")
    channel = h.fake.channel_id("general")
    data = h.fake.message_payload(person, channel, "why though", reference=posted.id)
    answer = await h.post_message(data, channel, None)
    answer_row = await settled_row(h, answer)
    assert answer_row.addressed  # a reply to our message
    assert answer_row.status == "done"


async def test_a_message_in_a_thread_the_bot_has_not_seen_is_placed_under_its_parent(
    h: DiscordHarness,
) -> None:
    root = await h.say("alice", "general", "old discussion")
    alice = h.fake.user("alice")
    await h.fake.start_thread(root.message_id, alice, announce=False)
    data = h.fake.message_payload(
        alice, root.message_id, f"{h.mention()} revive this", mentions=(h.fake.bot,)
    )
    sent = await h.post_message(data, root.channel, root.message_id)
    row = await settled_row(h, sent)
    assert row.address == f"discord:{h.fake.guild_id}/{root.channel}#{root.message_id}"
    assert h.fake.requests_to("GET", "/channels/{channel_id}")
    posted = await reply_to(h, "echo: revive this")
    assert posted.thread == root.message_id


async def test_an_update_without_an_edit_is_not_an_inbound(h: DiscordHarness) -> None:
    sent = await h.say("alice", "general", "see https://example.com", mention=True)
    await reply_to(h, "echo: see https://example.com")
    before = len(inbox(h))
    message = h.fake.messages[sent.message_id]
    embed = {"type": "link", "url": "https://example.com"}
    await h.fake.dispatch("MESSAGE_UPDATE", {**message.data, "embeds": [embed]})
    await answered_marker(h)
    assert len(inbox(h)) == before + 1  # the marker only


async def test_mentions_are_readable_text(h: DiscordHarness) -> None:
    bob = h.fake.user("bob")
    channel = h.fake.channel_id("general")
    content = f"{h.mention()}, ask <@{bob['id']}> about <#{channel}>"
    data = h.fake.message_payload(
        h.fake.user("alice"), channel, content, mentions=(h.fake.bot, bob)
    )
    row = await settled_row(h, await h.post_message(data, channel, None))
    assert row.text == "ask @Bob about #general"


# --- outbound ------------------------------------------------------------------------------


async def test_replies_reference_the_message_and_ping_nobody_else(h: DiscordHarness) -> None:
    sent = await h.say("alice", "general", "LONG please", mention=True)
    await eventually(lambda: any("Closing 13." in p.text for p in h.posted()))
    first, *rest = [h.fake.messages[p.id] for p in h.posted()]
    assert first.data["message_reference"]["message_id"] == sent.message_id
    assert first.data["message_reference"]["fail_if_not_exists"] is False
    assert first.data["allowed_mentions"] == {"parse": [], "replied_user": True}
    assert rest and all("message_reference" not in m.data for m in rest)
    posts = h.fake.requests_to("POST", MESSAGES_ROUTE)
    assert all(r.body["nonce"] and r.body["enforce_nonce"] for r in posts)


async def test_a_repeated_send_of_a_chunk_does_not_post_twice(h: DiscordHarness) -> None:
    chunk = OutboundChunk(
        "d1", 0, 1, general(h), "only once", "mika", DeliveryKind.NOTICE, None, None, "notice:x:0"
    )
    first = await h.adapter.send(chunk)
    again = await h.adapter.send(chunk)  # e.g. after a crash before the id was stored
    assert first == again
    assert len([p for p in h.posted() if p.text == "only once"]) == 1


async def test_an_anima_with_its_own_bot_posts_as_itself(tmp_path: Path) -> None:
    fake = FakeDiscord()
    kai = fake.add_bot("kai-bot-token", "kai")
    async with open_harness(tmp_path, fake=fake, anima_tokens={"kai": "kai-bot-token"}) as h:
        alice = fake.user("alice")
        channel = fake.channel_id("general")
        data = fake.message_payload(
            alice, channel, f"<@{kai['id']}> how is the build?", mentions=(kai,)
        )
        row = await settled_row(h, await h.post_message(data, channel, None))
        assert (row.anima, row.mentions, row.addressed) == ("kai", ["kai"], True)
        assert row.text == "@kai how is the build?"
        posted = await reply_to(h, "echo: @kai how is the build?")
        assert fake.messages[posted.id].author_id == kai["id"]  # the preview and its edits too

        await h.say("alice", "general", "aria, and you?", mention=True)
        posted = await reply_to(h, "echo: aria, and you?")
        assert fake.messages[posted.id].author_id == fake.bot["id"]

        await h.dm("alice", "kai: a private question")
        posted = await reply_to(h, "echo: kai: a private question")
        assert fake.messages[posted.id].author_id == fake.bot["id"]  # DMs are the main bot's

        assert not [r for r in inbox(h) if r.sender_key == f"discord:{kai['id']}"]


async def test_an_unknown_channel_fails_the_delivery_for_good(h: DiscordHarness) -> None:
    address = Address("discord", h.fake.guild_id, "424242424242424242")
    delivery_id = queue_delivery(h, address, "nobody will read this", "notice:404")

    def failed() -> list[DeliveryRow]:
        rows = h.hub.outbox.listing(DeliveryStatus.FAILED.value, 10)
        return [row for row in rows if row.id == delivery_id]

    (row,) = await eventually(failed)
    assert "404" in (row.error or "") and "10003" in (row.error or "")
    assert len(h.fake.requests_to("POST", MESSAGES_ROUTE)) == 1  # not retried


async def test_a_rate_limit_discord_py_gives_up_on_is_retried_by_the_outbox(
    h: DiscordHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="hub.delivery.outbox")
    h.fake.rate_limit("POST", MESSAGES_ROUTE, 5, 0.05)  # discord.py tries five times
    delivery_id = queue_delivery(h, general(h), "after the storm", "notice:429")

    def sent() -> DeliveryRow | None:
        row = delivery(h, delivery_id)
        return row if row is not None and row.status == DeliveryStatus.SENT.value else None

    row = await eventually(sent)
    assert len(row.message_ids) == 1
    assert len(h.fake.requests_to("POST", MESSAGES_ROUTE)) == 6
    assert len([p for p in h.posted() if p.text == "after the storm"]) == 1
    assert any("rate limit" in r.getMessage() for r in caplog.records)


async def test_a_long_rate_limit_reaches_the_outbox_as_rate_limited(h: DiscordHarness) -> None:
    h.fake.rate_limit("POST", MESSAGES_ROUTE, 1, 45.0)  # beyond discord.py's 30 s
    chunk = OutboundChunk(
        "d2", 0, 1, general(h), "later", "mika", DeliveryKind.NOTICE, None, None, "notice:y:0"
    )
    with pytest.raises(RateLimited) as caught:
        await h.adapter.send(chunk)
    assert caught.value.retry_after == pytest.approx(45.0)
    assert [p for p in h.posted() if p.text == "later"] == []


async def test_a_rate_limited_edit_of_the_preview_is_retried_on_the_same_message(
    h: DiscordHarness,
) -> None:
    h.fake.rate_limit("PATCH", EDIT_ROUTE, 5, 0.05)
    # A reply written slowly (STREAM) is previewed; its edits meet the 429s.
    sent = await h.say("alice", "general", "STREAM edit me", mention=True)
    row = await settled_row(h, sent)
    assert row.status == "done"
    final = "Thinking about it: the answer is 42."
    posted = await eventually(lambda: [p for p in h.posted() if p.text == final])
    assert len(h.posted()) == 1 and posted[0].edits == 1  # the preview, edited once
    assert len(h.fake.requests_to("PATCH", EDIT_ROUTE)) == 6


async def test_a_reply_to_an_animas_message_continues_with_that_anima(h: DiscordHarness) -> None:
    await h.say("alice", "general", "aria, what changed?", mention=True)
    posted = await reply_to(h, "echo: aria, what changed?")
    channel = h.fake.channel_id("general")
    bob = h.fake.user("bob")
    data = h.fake.message_payload(bob, channel, "and why?", reference=posted.id)
    row = await settled_row(h, await h.post_message(data, channel, None))
    assert (row.anima, row.mentions) == ("aria", ["aria"])
    data = h.fake.message_payload(bob, channel, "kai, do you agree?", reference=posted.id)
    row = await settled_row(h, await h.post_message(data, channel, None))
    assert row.anima == "kai"  # naming another Anima wins


async def test_a_rejected_anima_token_leaves_that_anima_to_the_main_bot(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeDiscord()  # knows no "revoked-token" bot: GET /users/@me answers 401
    async with open_harness(tmp_path, fake=fake, anima_tokens={"kai": "revoked-token"}) as h:
        assert "the main bot answers for kai" in caplog.text
        await h.say("alice", "general", "kai, still there?", mention=True)
        posted = await reply_to(h, "echo: kai, still there?")
        assert fake.messages[posted.id].author_id == fake.bot["id"]


async def test_a_preview_whose_id_was_never_saved_is_found_by_its_nonce_and_edited(
    h: DiscordHarness,
) -> None:
    """A kill between Discord creating the preview and the hub saving its id: the reply,
    sent after the restart with the preview's nonce, is answered with that preview, which
    it edits instead of posting a second message."""
    asked = "1577000000000000001"  # the message answered (only its id matters here)
    channel = h.fake.channel_id("general")
    async with httpx.AsyncClient(base_url=h.fake.api_url) as http:
        lost = await http.post(  # the preview as the adapter posts it: main bot, its nonce
            f"/channels/{channel}/messages",
            headers={"Authorization": f"Bot {h.fake.bot_token}"},
            json={
                "content": "the whole … ",
                "nonce": rest.nonce_for(f"preview:{asked}"),
                "enforce_nonce": True,
            },
        )
    lost.raise_for_status()
    # It answers the event `asked` and quotes that message (a Discord message's event id
    # is its id).
    chunk = OutboundChunk(
        "d9",
        0,
        1,
        general(h),
        "the whole reply",
        "mika",
        DeliveryKind.REPLY,
        asked,
        asked,
        "reply:z:0",
    )
    assert await h.adapter.send(chunk) == lost.json()["id"]
    mine = [(m.id, m.content) for m in h.fake.bot_messages()]
    assert mine == [(lost.json()["id"], "the whole reply")]  # edited, nothing posted beside it
