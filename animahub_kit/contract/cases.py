"""The contract every platform adapter passes (DESIGN §9), with its real SDK against a fake.

Each case speaks as people on the platform and checks two things only: what the hub stored
(the normalized inbox row, the delivery, the platform's state) and what the platform
received (the fake's record). A test module runs them with
`from animahub_kit.contract.cases import *` and its CONTRACT_PLATFORMS (plugin.py).
"""

from __future__ import annotations

import asyncio
import math
import re

import pytest
from sqlmodel import select

from animahub_kit.contract.harness import (
    FENCE,
    LONG_REPLY,
    Harness,
    Opener,
    Posted,
    Sent,
    eventually,
)
from hub.adapter import PlatformState
from hub.delivery.platforms import PlatformStatus
from hub.messages import DeliveryKind
from hub.store.models import DeliveryRow, InboxItem
from hub.supervise import Backoff

# The cases are coroutines; marked so they run under pytest-asyncio's strict mode too.
pytestmark = pytest.mark.asyncio


def inbox_row(h: Harness, sent: Sent) -> InboxItem | None:
    with h.hub.db.session() as session:
        return session.exec(
            select(InboxItem).where(
                InboxItem.platform == h.platform, InboxItem.event_id == sent.event_id
            )
        ).first()


def inbox_count(h: Harness) -> int:
    with h.hub.db.session() as session:
        return len(session.exec(select(InboxItem.id)).all())


async def settled_row(h: Harness, sent: Sent) -> InboxItem:
    """The inbox row once the hub has finished with it (answered, ignored or failed)."""

    def finished() -> InboxItem | None:
        row = inbox_row(h, sent)
        return row if row is not None and row.status not in ("received", "processing") else None

    row: InboxItem = await eventually(finished)
    return row


async def reply_to(h: Harness, needle: str) -> Posted:
    def found() -> Posted | None:
        return next((p for p in h.posted() if needle in p.text), None)

    posted: Posted = await eventually(found)
    return posted


def replies_containing(h: Harness, needle: str) -> list[Posted]:
    return [p for p in h.posted() if needle in p.text]


async def answered_marker(h: Harness, channel: str = "general") -> None:
    """Send one more message and wait for its answer: everything sent before it has been
    handled, so a missing reply really is missing and not just slow."""
    await h.say("carol", channel, "marker message", mention=True)
    await reply_to(h, "echo: marker message")


def proactive(h: Harness, channel: str, text: str, key: str) -> str:
    """A post that answers no message (a heartbeat), enqueued as the hub's agenda does; a
    plain send, never a streamed preview edited into place. Returns the delivery id."""
    with h.hub.db.write() as conn:
        row = h.hub.outbox.enqueue(
            conn, h.address(channel), text, DeliveryKind.HEARTBEAT, "mika", key
        )
    return row.id


def delivery(h: Harness, delivery_id: str) -> DeliveryRow:
    found = [d for d in h.hub.outbox.listing(None, 100) if d.id == delivery_id]
    assert len(found) == 1, delivery_id
    return found[0]


async def finished_delivery(h: Harness, delivery_id: str) -> DeliveryRow:
    row: DeliveryRow = await eventually(
        lambda: (d := delivery(h, delivery_id)).status != "pending" and d
    )
    return row


def platform_status(h: Harness) -> PlatformStatus:
    return h.hub.platforms.status()[h.platform]


async def platform_in(h: Harness, state: PlatformState, timeout_s: float = 10.0) -> PlatformStatus:
    status: PlatformStatus = await eventually(
        lambda: (s := platform_status(h)).state is state and s, timeout_s
    )
    return status


def assert_lands_where_asked(h: Harness, sent: Sent, posted: Posted) -> None:
    assert posted.channel == sent.channel
    assert posted.thread == h.reply_thread(sent)
    if h.replies_by_reference:
        assert posted.reply_to == sent.message_id


# --- inbound normalization and routing ----------------------------------------------------


async def test_dm_is_normalized_routed_and_answered_in_the_dm(harness: Harness) -> None:
    sent = await harness.dm("alice", "hello from a DM")
    row = await settled_row(harness, sent)
    assert row.address_kind == "dm"
    assert row.sender_key == harness.user_key("alice")
    assert row.text == "hello from a DM"
    assert row.status == "done"
    posted = await reply_to(harness, "echo: hello from a DM")
    assert_lands_where_asked(harness, sent, posted)


async def test_channel_mention_reaches_the_named_anima(harness: Harness) -> None:
    sent = await harness.say("bob", "general", "kai, what is the build status?", mention=True)
    row = await settled_row(harness, sent)
    assert row.address_kind in ("channel", "group")  # a LINE or Telegram group is a group
    assert row.sender_key == harness.user_key("bob")
    assert row.text == "kai, what is the build status?"  # the bot mention is not text
    assert row.anima == "kai"
    posted = await reply_to(harness, "echo: kai, what is the build status?")
    assert_lands_where_asked(harness, sent, posted)
    assert harness.responder.seen[-1].anima == "kai"


@pytest.mark.needs("mention_routing")
async def test_channel_chatter_not_meant_for_an_anima_is_kept_but_not_answered(
    harness: Harness,
) -> None:
    sent = await harness.say("bob", "general", "lunch anyone?")
    row = await settled_row(harness, sent)
    assert row.status == "ignored"
    await answered_marker(harness)
    assert replies_containing(harness, "lunch anyone?") == []


@pytest.mark.needs("threads")
async def test_thread_replies_stay_in_the_thread_and_continue_without_a_mention(
    harness: Harness,
) -> None:
    root = await harness.say("alice", "general", "a thread starts here")
    first = await harness.say("alice", "general", "aria, look at this", thread=root.message_id)
    assert first.thread is not None
    row = await settled_row(harness, first)
    assert row.anima == "aria"
    assert row.address.endswith(f"#{first.thread}")
    posted = await reply_to(harness, "echo: aria, look at this")
    assert_lands_where_asked(harness, first, posted)

    follow = await harness.say("alice", "general", "and what about this?", thread=first.thread)
    follow_row = await settled_row(harness, follow)
    assert follow_row.anima == "aria"  # the Anima already talking in the thread
    posted = await reply_to(harness, "echo: and what about this?")
    assert_lands_where_asked(harness, follow, posted)


@pytest.mark.needs("edits")
async def test_an_edit_is_normalized_and_kept_but_not_answered_twice(harness: Harness) -> None:
    sent = await harness.say("alice", "general", "meeting at 10", mention=True)
    await reply_to(harness, "echo: meeting at 10")
    edited = await harness.edit("alice", sent, "meeting at 11")
    row = await settled_row(harness, edited)
    assert row.edit_of == sent.message_id
    assert row.text == "meeting at 11"
    assert row.status == "ignored"
    await answered_marker(harness)
    assert replies_containing(harness, "meeting at 11") == []
    assert len(replies_containing(harness, "meeting at 10")) == 1


@pytest.mark.needs("captions")
async def test_an_attachment_is_normalized(harness: Harness) -> None:
    url = "https://files.example.com/report.pdf"
    sent = await harness.attach("alice", "general", "please read this", "report.pdf", url)
    row = await settled_row(harness, sent)
    expected = [("report.pdf", harness.attachment_url(url))]
    assert [(a["name"], a["url"]) for a in row.attachments] == expected
    assert row.text == "please read this"
    await reply_to(harness, "echo: please read this")


# --- replies: chunking, streaming, rate limits, redelivery ---------------------------------


def _fences_balanced(text: str) -> bool:
    return len(re.findall(r"^\s*```", text, flags=re.MULTILINE)) % 2 == 0


async def test_a_10000_character_reply_is_chunked_in_order_without_breaking_the_fence(
    harness: Harness,
) -> None:
    assert len(LONG_REPLY) >= 10_000
    sent = await harness.say("alice", "general", "LONG answer please", mention=True)
    row = await settled_row(harness, sent)
    assert row.status == "done"
    last_line = "print('line 119')"
    await eventually(lambda: any("Closing 15." in p.text for p in harness.posted()))
    chunks = [p for p in harness.posted() if p.channel == sent.channel]
    chunks = [p for p in chunks if p.thread == harness.reply_thread(sent)]
    assert len(chunks) >= math.ceil(len(LONG_REPLY) / harness.max_text)
    for chunk in chunks:
        assert len(chunk.text) <= harness.max_text
        assert _fences_balanced(chunk.text), chunk.text[:200]
    joined = "\n".join(c.text for c in chunks)
    positions = [joined.find(f"print('line {i:03d}')") for i in range(120)]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)
    assert joined.find("Paragraph 0.") < joined.find(last_line) < joined.find("Closing 15.")
    assert FENCE.splitlines()[1] in joined


@pytest.mark.needs("streaming")
async def test_a_streamed_reply_is_one_message_edited_into_the_final_text(
    harness: Harness,
) -> None:
    sent = await harness.say("alice", "general", "STREAM it", mention=True)
    await settled_row(harness, sent)
    final = "Thinking about it: the answer is 42."

    def finished() -> list[Posted]:
        return [p for p in harness.posted() if p.text.startswith("Thinking")]

    posts = await eventually(lambda: [p for p in finished() if p.text == final])
    assert len(finished()) == 1, [p.text for p in finished()]  # edited, never posted twice
    assert posts[0].edits >= 1
    assert_lands_where_asked(harness, sent, posts[0])


async def test_a_429_is_retried_after_retry_after_with_nothing_lost_or_doubled(
    harness: Harness,
) -> None:
    before = harness.post_requests()
    harness.rate_limit_posts(2, retry_after=0.2)
    sent = await harness.say("alice", "general", "rate me", mention=True)
    posted = await reply_to(harness, "echo: rate me")
    assert_lands_where_asked(harness, sent, posted)
    await answered_marker(harness)
    assert len(replies_containing(harness, "echo: rate me")) == 1
    assert harness.post_requests() - before >= 3  # two refused, then the one that landed


async def test_a_redelivered_event_is_answered_once(harness: Harness) -> None:
    sent = await harness.say("alice", "general", "only once", mention=True)
    await reply_to(harness, "echo: only once")
    rows_before = inbox_count(harness)
    await harness.redeliver(sent)
    await harness.redeliver(sent)
    await answered_marker(harness)
    assert inbox_count(harness) == rows_before + 1  # the marker, not the redeliveries
    assert len(replies_containing(harness, "echo: only once")) == 1


async def test_a_forged_signature_is_rejected_and_nothing_is_stored(harness: Harness) -> None:
    rows_before = inbox_count(harness)
    assert await harness.forged() in (401, 403)
    assert inbox_count(harness) == rows_before


@pytest.mark.needs("replay_window")
async def test_a_stale_signed_request_is_rejected_and_nothing_is_stored(harness: Harness) -> None:
    rows_before = inbox_count(harness)
    assert await harness.stale() in (401, 403)
    assert inbox_count(harness) == rows_before


# --- delivery that cannot be confirmed -----------------------------------------------------


async def test_a_post_whose_answer_was_lost_is_never_sent_twice(harness: Harness) -> None:
    """The platform posted it, then the connection closed unanswered. Either the adapter
    confirms it safely (an idempotency key: LINE's X-Line-Retry-Key, Discord's nonce) and
    the delivery is sent with that message's id, or it fails visibly as outcome unknown;
    it is never sent a second time."""
    harness.drop_next_send_response()
    sent_id = proactive(harness, "general", "the nightly report", "contract:lost-answer")
    row = await finished_delivery(harness, sent_id)
    await answered_marker(harness)
    posted = replies_containing(harness, "the nightly report")
    assert len(posted) == 1, [p.text for p in posted]  # the platform did get it, once
    assert posted[0].channel == harness.address("general").channel
    if row.status == "failed":
        assert "outcome unknown" in (row.error or ""), row.error
        assert sent_id in [d.id for d in harness.hub.outbox.listing("failed", 10)]
    else:
        assert row.status == "sent", (row.status, row.error)
        assert row.message_ids == [posted[0].id]


# --- the platform's state -------------------------------------------------------------------

HELD_S = 0.3  # long enough for the outbox to have tried a delivery it would not hold


async def test_a_platform_down_at_start_leaves_the_hub_running_and_connects_when_up(
    opener: Opener,
) -> None:
    async with opener(platform_down=True) as h:  # Hub.start returned: the hub runs
        down = await platform_in(h, PlatformState.DOWN)
        assert re.search("reach|connect", down.reason, re.IGNORECASE), down.reason
        assert h.platform in down.reason.lower() and down.next_retry_at is not None, down
        held = proactive(h, "general", "written while it was down", "contract:down")
        await asyncio.sleep(HELD_S)  # the outbox polls every 0.05 s: it has looked by now
        waiting = delivery(h, held)
        assert (waiting.status, waiting.attempts) == ("pending", 0), waiting  # held, not spent

        await h.platform_up()
        up = await platform_in(h, PlatformState.UP, timeout_s=20)
        assert up.reason == "" and up.next_retry_at is None
        sent = await h.dm("alice", "are you back?")
        posted = await reply_to(h, "echo: are you back?")
        assert_lands_where_asked(h, sent, posted)
        assert (await finished_delivery(h, held)).status == "sent"
        await answered_marker(h)
        assert len(replies_containing(h, "written while it was down")) == 1
        assert len(replies_containing(h, "echo: are you back?")) == 1


async def test_wrong_credentials_are_reported_unauthorized_and_not_retried(
    opener: Opener,
) -> None:
    async with opener(wrong_credentials=True) as h:
        refused = await platform_in(h, PlatformState.UNAUTHORIZED)
        assert h.platform in refused.reason.lower() and refused.next_retry_at is None, refused
        # A supervisor retrying a failed start comes back within the first backoff delay
        # (at most its base); wait past it, then count what reached the platform.
        await asyncio.sleep(Backoff().base_s * 1.5)
        assert platform_status(h).state is PlatformState.UNAUTHORIZED
        assert h.auth_attempts() == 1
