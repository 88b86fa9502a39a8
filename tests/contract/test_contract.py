"""The contract every platform adapter passes (DESIGN §9), with its real SDK against a fake.

Each case speaks as people on the platform and checks two things only: what the hub stored
(the normalized inbox row) and what the platform received (the fake's record).
"""

from __future__ import annotations

import math
import re

import pytest
from sqlmodel import select

from hub.store.models import InboxItem
from tests.contract.harness import FENCE, LONG_REPLY, Harness, Posted, Sent, eventually


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
    assert [(a["name"], a["url"]) for a in row.attachments] == [("report.pdf", url)]
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
