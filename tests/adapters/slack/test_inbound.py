"""What the hub keeps of Slack messages: people, their names, text, and what is not answered."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import select

from animahub_kit.contract.cases import (
    answered_marker,
    inbox_count,
    inbox_row,
    reply_to,
    settled_row,
)
from animahub_kit.contract.harness import Sent, eventually
from animahub_kit.contract.slack_harness import open_harness
from animahub_kit.fakes.slack_server import FakeSlack
from hub.markdown_files import read_document
from hub.store.models import InboxItem


def _rows(h: object, **where: str) -> list[InboxItem]:
    hub = h.hub  # type: ignore[attr-defined]
    with hub.db.session() as session:
        query = select(InboxItem)
        for key, value in where.items():
            query = query.where(getattr(InboxItem, key) == value)
        return list(session.exec(query).all())


async def test_the_display_name_is_resolved_once_and_kept_on_the_person(tmp_path: Path) -> None:
    def setup(fake: FakeSlack) -> None:
        fake.add_user("U0DAVE", "dave", display_name="", real_name="Dave Grohl")
        fake.add_channel("D0DAVE", kind="im")

    async with open_harness(tmp_path, setup=setup) as h:
        first = await settled_row(h, await h.dm("alice", "hi"))
        await settled_row(h, await h.dm("alice", "hi again"))
        assert first.sender_name == "Alice"  # the profile's display name
        assert len([c for c in h.fake.calls_of("users.info") if c.params["user"] == "U0ALICE"]) == 1
        meta, _ = read_document(h.hub.identity.profile_path(first.person_id or ""))
        assert meta["display_names"] == ["Alice"]
        assert meta["identities"] == ["slack:U0ALICE"]

        event = h.fake.message_event("U0DAVE", "D0DAVE", "hello")
        await h.fake.deliver(event)
        dave = await settled_row(h, Sent(f"D0DAVE:{event['ts']}", event["ts"], "D0DAVE", None))
        assert dave.sender_name == "Dave Grohl"  # no display name set: the real name
        meta, _ = read_document(h.hub.identity.profile_path(dave.person_id or ""))
        assert meta["display_names"] == ["Dave Grohl"]


async def test_slack_markup_becomes_commonmark(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        text = (
            "<@U0BOT> ask <@U0BOB> about <https://example.com/a?b=1&amp;c=2|the report> "
            "in <#C0RANDOM|random> &amp; check 1 &lt; 2 &gt; 0 at <https://example.org>"
        )
        event = h.fake.message_event("U0ALICE", "C0GENERAL", text)
        await h.fake.deliver(event)
        row = await settled_row(h, Sent(f"C0GENERAL:{event['ts']}", event["ts"], "C0GENERAL", None))
        assert row.text == (
            "ask @Bob about [the report](https://example.com/a?b=1&c=2) in #random & check "
            "1 < 2 > 0 at https://example.org"
        )
        assert row.address == f"slack:T0TEAM/C0GENERAL#{event['ts']}"  # its own thread
        assert row.reply_to == event["ts"] and row.addressed


async def test_an_app_mention_alone_is_normalized_like_the_message(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        message = h.fake.message_event("U0BOB", "C0RANDOM", "<@U0BOT> only the mention event")
        await h.fake.deliver(h.fake.mention_event(message))  # carries no channel_type
        sent = Sent(f"C0RANDOM:{message['ts']}", message["ts"], "C0RANDOM", None)
        row = await settled_row(h, sent)
        assert (row.address_kind, row.text) == ("channel", "only the mention event")
        assert [c.params["channel"] for c in h.fake.calls_of("conversations.info")] == ["C0RANDOM"]
        posted = await reply_to(h, "echo: only the mention event")
        assert posted.thread == message["ts"]
        rows = inbox_count(h)
        await h.fake.deliver(message)  # the message event of the same message, late
        await answered_marker(h)
        assert inbox_count(h) == rows + 1


async def test_the_bots_own_posts_come_back_and_are_neither_kept_nor_answered(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        sent = await h.say("alice", "general", "STREAM please", mention=True)
        await settled_row(h, sent)
        await eventually(lambda: any(m.updates for m in h.fake.messages))
        await answered_marker(h)
        echoed = [
            d
            for d in h.fake.deliveries
            if d.event_id not in {e for ids in h._events.values() for e in ids}
        ]
        assert echoed and all(d.status == 200 for d in echoed)  # posts and edits echoed
        assert _rows(h, sender_key="slack:U0BOT") == []
        assert all(not row.sender_is_bot for row in _rows(h))


async def test_another_bots_message_is_kept_but_not_answered(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        ts = h.fake.next_ts()
        event = {
            "type": "message",
            "subtype": "bot_message",
            "bot_id": "B0DEPLOY",
            "username": "deploy-bot",
            "text": "<@U0BOT> deployed v1.2",
            "ts": ts,
            "channel": "C0GENERAL",
            "channel_type": "channel",
        }
        await h.fake.deliver(event)
        row = await settled_row(h, Sent(f"C0GENERAL:{ts}", ts, "C0GENERAL", None))
        assert (row.sender_key, row.sender_name, row.sender_is_bot) == (
            "slack:B0DEPLOY",
            "deploy-bot",
            True,
        )
        assert row.status == "ignored"


async def test_a_reply_in_someone_elses_thread_is_not_addressed(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        root = await h.say("bob", "general", "team lunch?")
        reply = await h.say("carol", "general", "yes please", thread=root.message_id)
        row = await settled_row(h, reply)
        assert (row.addressed, row.status) == (False, "ignored")

        asked = await h.say("bob", "general", "mika, the build?", mention=True)
        await reply_to(h, "echo: mika, the build?")
        follow = await h.say("bob", "general", "thanks", thread=asked.message_id)
        follow_row = await settled_row(h, follow)
        assert follow_row.addressed  # a thread the bot answered in
        assert inbox_row(h, follow) is not None


async def test_a_slow_slack_lookup_does_not_hold_the_event_past_its_budget(
    tmp_path: Path,
) -> None:
    """The event is stored before Slack hears "received", so lookups have a time budget: a
    slow users.info is a failed lookup, the user id stands in, and the event is answered."""
    from adapters.slack.directory import LOOKUP_BUDGET_S

    async with open_harness(tmp_path) as h:
        h.fake.slow("users.info", LOOKUP_BUDGET_S + 2)
        row = await settled_row(h, await h.dm("alice", "are you there?"))
        assert row.status == "done" and row.sender_name == ""
        await reply_to(h, "echo: are you there?")
        h.fake.slow("users.info", 0)
        later = await settled_row(h, await h.dm("alice", "and now?"))
        assert later.sender_name == "Alice"  # looked up again next time
