"""Replies as Slack receives them: which bot posts, chunking, errors the outbox must see."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import httpx
import pytest
from sqlmodel import select

from animahub_kit.contract.cases import reply_to, settled_row
from animahub_kit.contract.harness import LONG_REPLY, eventually
from animahub_kit.contract.slack_harness import BOT_TOKEN, BOT_USER, open_harness
from animahub_kit.fakes.slack_server import FakeSlack
from hub.adapter import RateLimited
from hub.messages import Address, AddressKind, DeliveryKind, OutboundChunk
from hub.store.models import DeliveryRow, InboxItem
from tests.conftest import owner_headers
from tests.contract.test_previews import due_again

KAI_TOKEN = "xoxb-kai-own-app"


def add_kai(fake: FakeSlack) -> None:
    fake.add_bot(KAI_TOKEN, "U0KAI", "B0KAI", "kai")


async def test_an_anima_with_its_own_token_posts_as_itself(tmp_path: Path) -> None:
    async with open_harness(tmp_path, anima_tokens={"kai": KAI_TOKEN}, setup=add_kai) as h:
        # Written slowly (STREAM), so it is previewed: the post and its edits are kai's.
        sent = await h.say("alice", "general", "<@U0KAI> STREAM the build status?")
        row = await settled_row(h, sent)
        assert (row.anima, row.mentions, row.addressed) == ("kai", ["kai"], True)
        assert row.text == "@kai STREAM the build status?"
        final = "Thinking about it: the answer is 42."
        posted = await eventually(lambda: next((p for p in h.posted() if p.text == final), None))
        message = next(m for m in h.fake.messages if m.ts == posted.id)
        assert (message.user, message.username) == ("U0KAI", None)  # kai's own bot
        assert message.thread_ts == sent.message_id
        for method in ("chat.postMessage", "chat.update"):
            assert {c.token for c in h.fake.calls_of(method)} == {KAI_TOKEN}

        other = await h.say("bob", "general", "hello there", mention=True)
        await settled_row(h, other)
        posted = await eventually(
            lambda: next((p for p in h.posted() if p.text == "echo: hello there"), None)
        )
        message = next(m for m in h.fake.messages if m.ts == posted.id)
        # mika has no app of its own: the shared bot posts, signed with mika's name
        assert (message.user, message.username) == (BOT_USER, "mika")
        # kai's own posts came back as events too, and were not taken for a person's
        with h.hub.db.session() as session:
            senders = set(session.exec(select(InboxItem.sender_key)).all())
        assert senders == {"slack:U0ALICE", "slack:U0BOB"}


async def test_without_chat_write_customize_the_shared_bot_posts_unsigned(tmp_path: Path) -> None:
    def narrow(fake: FakeSlack) -> None:
        fake.add_bot(BOT_TOKEN, BOT_USER, "B0BOT", "animahub", scopes="chat:write,users:read")

    async with open_harness(tmp_path, setup=narrow) as h:
        await h.dm("alice", "who answers?")
        await reply_to(h, "echo: who answers?")
        assert all("username" not in c.params for c in h.fake.calls_of("chat.postMessage"))


async def test_a_long_reply_is_split_under_3900_characters(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        sent = await h.say("alice", "general", "LONG one", mention=True)
        await settled_row(h, sent)
        await eventually(lambda: any("Closing 13." in p.text for p in h.posted()))
        chunks = [p for p in h.posted() if p.thread == sent.message_id]
        assert len(chunks) >= math.ceil(len(LONG_REPLY) / 3900)
        assert all(0 < len(p.text) <= 3900 for p in chunks)
        assert all(p.text.count("```") % 2 == 0 for p in chunks)
        assert "print('line 000')" in chunks[0].text or "print('line 000')" in chunks[1].text


async def test_a_channel_not_found_fails_the_delivery_without_retrying(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.break_channel("C0GENERAL", "channel_not_found")
        sent = await h.say("bob", "general", "anyone there?", mention=True)
        await settled_row(h, sent)
        failed = await eventually(lambda: h.hub.outbox.listing("failed", 10))
        assert "channel_not_found" in (failed[0].error or "")
        assert failed[0].attempts == 0
        # the reply (written at once, so not previewed) tried once: a permanent error is
        # not retried
        assert len(h.fake.calls_of("chat.postMessage")) == 1
        async with httpx.AsyncClient(headers=owner_headers(h.hub.settings.home)) as http:
            listed = (await http.get(f"{h.hub_url}/api/deliveries?status=failed")).json()
        assert [d["id"] for d in listed] == [failed[0].id]


async def test_a_server_error_is_retried_until_the_reply_lands(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.fail("chat.postMessage", "internal_error", times=3, status=500)
        await h.dm("carol", "are you up?")
        await reply_to(h, "echo: are you up?")
        assert len([p for p in h.posted() if "are you up?" in p.text]) == 1
        assert len(h.fake.calls_of("chat.postMessage")) == 4


async def test_the_sdk_hands_a_429_to_the_outbox_instead_of_retrying(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        adapter = h.hub.adapters["slack"]
        h.fake.rate_limit("chat.postMessage", 1, retry_after=1)
        chunk = OutboundChunk(
            delivery_id="d1",
            index=0,
            count=1,
            address=Address("slack", "T0TEAM", "C0GENERAL", None, AddressKind.CHANNEL),
            text="hello",
            anima="mika",
            kind=DeliveryKind.REPORT,
            answers=None,
            reply_to=None,
            idempotency_key="d1:0",
        )
        with pytest.raises(RateLimited) as caught:
            await adapter.send(chunk)
        assert caught.value.retry_after == 1
        assert len(h.fake.calls_of("chat.postMessage")) == 1  # no retry inside the SDK
        with pytest.raises(RateLimited) as held:  # the channel is held until then
            await adapter.send(chunk)
        assert 0 < held.value.retry_after <= 1
        assert len(h.fake.calls_of("chat.postMessage")) == 1  # Slack was not asked again
        await asyncio.sleep(held.value.retry_after)
        ts = await adapter.send(chunk)
        assert [m.ts for m in h.fake.messages] == [ts]


@pytest.mark.parametrize("where", ["thread", "dm"])
async def test_a_reply_a_stop_cut_off_mid_send_is_found_on_slack_not_posted_again(
    tmp_path: Path, where: str
) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.drop_next_send_response()  # carried out, its answer lost: the id is unknown
        text = f"cut off in a {where}"
        if where == "dm":
            sent = await h.dm("alice", text)
        else:
            sent = await h.say("alice", "general", text, mention=True)

        def reply_row(status: str) -> DeliveryRow | None:
            rows = [d for d in h.hub.outbox.listing(None, 50) if d.answers == sent.event_id]
            return rows[0] if rows and rows[0].status == status else None

        failed = await eventually(lambda: reply_row("failed"))
        assert failed.sending_since is not None  # written ahead of the send
        posts = [m for m in h.fake.messages if m.text == f"echo: {text}"]
        assert len(posts) == 1
        # As a kill leaves it: still pending, its chunk sent, no id recorded.
        due_again(h.hub, failed.id, error=None)
        h.hub.outbox.wake()
        done = await eventually(lambda: reply_row("sent"))
        assert done.message_ids == [posts[0].ts]  # found, not posted again
        assert done.sending_since is None
        assert [m.ts for m in h.fake.messages if m.text == f"echo: {text}"] == [posts[0].ts]
        looked = "conversations.history" if where == "dm" else "conversations.replies"
        assert h.fake.calls_of(looked)
