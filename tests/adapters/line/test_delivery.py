"""Replies as LINE receives them: reply tokens first, pushes with retry keys, quota and 429s.

Everything runs through the real hub and line-bot-sdk against animahub_kit/fakes/line_server.py.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from adapters.line import LineAdapter, LineSettings
from animahub_kit.contract.harness import ScriptedResponder, eventually
from animahub_kit.contract.line_harness import (
    BOT_USER,
    CHANNELS,
    LineHarness,
    open_harness,
    user_id,
)
from animahub_kit.fakes.line_server import MAX_TEXT, QUOTA_MESSAGE
from hub.adapter import Adapter
from hub.messages import Address, AddressKind, DeliveryKind
from hub.turns.llm import TurnContext
from tests.adapters.line.helpers import reply_to, settled_row
from tests.conftest import owner_headers
from tests.contract.test_previews import due_again, restart_adapter

PARAGRAPH = "Word " * 900  # ~4,500 characters: one LINE message each


class HugeResponder(ScriptedResponder):
    """ "HUGE n" is answered with n paragraphs of about 4,500 characters, numbered."""

    async def stream(self, ctx: TurnContext) -> AsyncIterator[str]:
        if ctx.text.startswith("HUGE"):
            self.seen.append(ctx)
            count = int(ctx.text.split()[1])
            yield "\n\n".join(f"Part {i}. {PARAGRAPH}" for i in range(count))
        else:
            async for piece in super().stream(ctx):
                yield piece


def proactive(h: LineHarness, chat: str, text: str, key: str, kind: AddressKind) -> str:
    """A heartbeat-style post (no message it answers), enqueued as the hub enqueues one."""
    address = Address("line", BOT_USER, chat, None, kind)
    with h.hub.db.write() as conn:
        row = h.hub.outbox.enqueue(conn, address, text, DeliveryKind.HEARTBEAT, "mika", key)
    return row.id


async def delivery_status(h: LineHarness, delivery_id: str) -> str:
    def finished() -> str | None:
        rows = [d for d in h.hub.outbox.listing(None, 50) if d.id == delivery_id]
        return rows[0].status if rows and rows[0].status != "pending" else None

    status: str = await eventually(finished)
    return status


async def test_a_reply_packs_five_messages_on_the_token_and_pushes_the_rest(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path, responder=HugeResponder()) as h:
        await h.dm("alice", "HUGE 7")
        await eventually(lambda: len(h.fake.messages) == 7)
        replies, pushes = h.fake.calls_to("reply"), h.fake.calls_to("push")
        assert len(replies) == 1 and len(pushes) == 1
        assert replies[0].body is not None and len(replies[0].body["messages"]) == 5
        assert pushes[0].body is not None and len(pushes[0].body["messages"]) == 2
        assert pushes[0].body["to"] == user_id("alice")
        uuid.UUID(pushes[0].headers["X-Line-Retry-Key"])  # a UUID, as LINE requires
        texts = h.fake.texts()
        assert [t.split(".")[0] for t in texts] == [f"Part {i}" for i in range(7)]
        assert all(len(t) <= MAX_TEXT for t in texts)
        assert [m.via for m in h.fake.messages] == ["reply"] * 5 + ["push"] * 2


async def test_a_proactive_post_is_a_push_and_a_retried_push_is_never_doubled(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.drop_next_send_response()  # accepted, then the connection closes unanswered
        delivery = proactive(h, CHANNELS["general"], "Morning report", "hb:1", AddressKind.GROUP)
        assert await delivery_status(h, delivery) == "sent"
        pushes = h.fake.calls_to("push")
        assert len(pushes) == 2  # the lost answer, then the retry LINE answered 409
        assert pushes[0].headers["X-Line-Retry-Key"] == pushes[1].headers["X-Line-Retry-Key"]
        assert [p.status for p in pushes] == [0, 409]
        assert h.fake.texts() == ["Morning report"]  # sent once
        row = next(d for d in h.hub.outbox.listing("sent", 10) if d.id == delivery)
        assert row.message_ids == [h.fake.messages[0].id]  # the id LINE gave the first time
        assert h.fake.calls_to("reply") == []


async def test_a_reply_whose_answer_was_lost_is_failed_not_pushed_again(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.drop_next_send_response()
        sent = await h.dm("bob", "are you there?")
        await settled_row(h, sent)
        failed = await eventually(lambda: h.hub.outbox.listing("failed", 10))
        assert "may have been delivered" in (failed[0].error or "")
        assert h.fake.texts() == ["echo: are you there?"]  # LINE did deliver it, once
        assert h.fake.calls_to("push") == []


async def test_an_expired_reply_token_falls_back_to_a_push(tmp_path: Path) -> None:
    async with open_harness(tmp_path, reply_token_ttl_s=0.0) as h:  # LINE refuses every token
        await h.dm("carol", "late answer")
        await reply_to(h, "echo: late answer")
        assert [c.status for c in h.fake.calls_to("reply")] == [400]
        assert [m.via for m in h.fake.messages] == ["push"]


async def test_a_token_the_adapter_knows_is_stale_is_not_tried(tmp_path: Path) -> None:
    def build(section: LineSettings) -> Adapter:
        return LineAdapter(section, reply_token_ttl_s=0.0)

    async with open_harness(tmp_path, factory=build) as h:
        await h.dm("carol", "no token")
        await reply_to(h, "echo: no token")
        assert h.fake.calls_to("reply") == []
        assert [m.via for m in h.fake.messages] == ["push"]


async def test_the_monthly_quota_fails_a_push_visibly_while_replies_stay_free(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.exhaust_quota()
        delivery = proactive(h, CHANNELS["random"], "Weekly report", "cron:1", AddressKind.GROUP)
        assert await delivery_status(h, delivery) == "failed"
        assert len(h.fake.calls_to("push")) == 1  # final: not retried
        async with httpx.AsyncClient(headers=owner_headers(h.hub.settings.home)) as http:
            listed = (await http.get(f"{h.hub_url}/api/deliveries?status=failed")).json()
        assert [d["id"] for d in listed] == [delivery]
        assert QUOTA_MESSAGE.rstrip(".").lower() in listed[0]["error"].lower()
        await h.dm("alice", "still there?")  # a reply costs no quota
        await reply_to(h, "echo: still there?")


async def test_an_ordinary_429_waits_and_sends_once(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.rate_limit(1, paths=("push",))  # no Retry-After, as LINE: the adapter waits 1 s
        delivery = proactive(h, user_id("alice"), "Reminder", "hb:2", AddressKind.DM)
        assert await delivery_status(h, delivery) == "sent"
        assert [c.status for c in h.fake.calls_to("push")] == [429, 200]
        assert h.fake.texts() == ["Reminder"]


async def test_a_429_on_a_reply_keeps_the_token_for_the_retry(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.rate_limit(1, retry_after=0.1, paths=("reply",))
        await h.dm("bob", "patience")
        await reply_to(h, "echo: patience")
        assert [c.status for c in h.fake.calls_to("reply")] == [429, 200]
        assert h.fake.calls_to("push") == []


async def test_a_5xx_on_a_reply_is_tried_again_on_the_same_token_and_sent_once(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.fail_next_reply(503)  # nothing delivered: LINE failed before sending
        await h.dm("bob", "flaky")
        await reply_to(h, "echo: flaky")
        replies = h.fake.calls_to("reply")
        assert [c.status for c in replies] == [503, 200]
        tokens = {c.body["replyToken"] for c in replies if c.body is not None}
        assert len(tokens) == 1  # the same token: LINE carries a token out once at most
        assert h.fake.texts() == ["echo: flaky"]
        assert h.fake.calls_to("push") == []
        await eventually(lambda: [d.status for d in h.hub.outbox.listing(None, 10)] == ["sent"])


async def test_a_5xx_on_a_reply_that_was_delivered_is_not_sent_again(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.fail_next_reply(500, delivered=True)  # sent, token spent, answered 500
        await h.dm("bob", "did it arrive?")
        sent = await eventually(lambda: h.hub.outbox.listing("sent", 10))
        replies = h.fake.calls_to("reply")
        assert [c.status for c in replies] == [500, 400]  # the token was spent: it arrived
        assert h.fake.texts() == ["echo: did it arrive?"]  # once, and no push after it
        assert h.fake.calls_to("push") == []
        assert len(sent[0].message_ids) == 1


async def test_a_reply_a_stop_cut_off_is_asked_again_on_its_token_not_pushed(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        h.fake.drop_next_send_response()  # the reply: carried out, its answer lost
        sent = await h.dm("bob", "cut off?")
        await settled_row(h, sent)
        failed = (await eventually(lambda: h.hub.outbox.listing("failed", 10)))[0]
        assert failed.sending_since is not None
        # As a kill leaves it: still pending, the chunk sent, no id recorded; the new
        # adapter has no reply token in memory, only what the hub stored.
        await restart_adapter(h)
        due_again(h.hub, failed.id, error=None)
        h.hub.outbox.wake()
        assert await delivery_status(h, failed.id) == "sent"
        assert [c.status for c in h.fake.calls_to("reply")] == [0, 400]  # spent: delivered
        assert h.fake.texts() == ["echo: cut off?"]  # once, and never pushed
        assert h.fake.calls_to("push") == []
